"""Which drafts a shared pass runs. One sequence's draft rows cost little next to reading the weights, but a
pass shared by several sequences already does more arithmetic per weight read, and on a device without
matrix units each added row costs more. A draft runs when the tokens it is expected to give raise the
pass's tokens per second, by what passes of each size have cost on this runner. Leaving guesses out never
changes an answer (docs/exactness.md, section 5)."""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from typing import Optional

from kinetic.engine.generate import Pass

WEIGHT = 0.2  # of the latest pass in the running seconds of its size


class PassCosts:
    """Seconds a pass takes by its number of rows on one runner: a running mean for each size seen."""

    def __init__(self) -> None:
        self._seconds: dict[int, float] = {}
        self._sizes: list[int] = []  # the sizes seen, in order

    def record(self, rows: int, seconds: float) -> None:
        before = self._seconds.get(rows)
        if before is None:
            self._sizes.insert(bisect_left(self._sizes, rows), rows)
            self._seconds[rows] = seconds
        else:
            self._seconds[rows] = before + WEIGHT * (seconds - before)

    def of(self, rows: int) -> Optional[float]:
        """The seconds of a pass of `rows` rows, between the nearest sizes seen; None past the largest."""
        at = bisect_left(self._sizes, rows)
        if at == len(self._sizes):
            return None
        above = self._sizes[at]
        if above == rows or at == 0:
            return self._seconds[above]
        below = self._sizes[at - 1]
        share = (rows - below) / (above - below)
        return self._seconds[below] + share * (self._seconds[above] - self._seconds[below])


def drafts_worth_running(passes: list[Pass], costs: PassCosts) -> list[Pass]:
    """passes, each draft left out unless its expected tokens (Pass.kept per guess) raise the expected tokens
    per second of the pass; the most trusted drafts are weighed first. A size never measured is tried."""
    rows = sum(len(step.rows) - step.guesses for step in passes)
    tokens = sum(1.0 for step in passes if step.rows[len(step.rows) - step.guesses - 1].logits)
    running = set()
    for index in sorted((i for i, step in enumerate(passes) if step.guesses), key=lambda i: -passes[i].kept):
        step = passes[index]
        without, with_draft = costs.of(rows), costs.of(rows + step.guesses)
        gain = step.kept * step.guesses
        if without is None or with_draft is None or (tokens + gain) * without > tokens * with_draft:
            running.add(index)
            rows, tokens = rows + step.guesses, tokens + gain
    return [step if not step.guesses or i in running else
            dataclasses.replace(step, rows=step.rows[: len(step.rows) - step.guesses], guesses=0)
            for i, step in enumerate(passes)]
