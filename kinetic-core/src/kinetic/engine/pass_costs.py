"""Which guesses a shared pass runs. One sequence's draft rows cost little beside reading the weights, but a
pass that several sequences share already does more arithmetic per weight read, and on a CPU without
matrix units each added row costs more. A pass runs the guesses that make its expected tokens per second
highest, by what passes of each size have cost on this runner. Leaving guesses out never changes an answer
(docs/exactness.md, section 5, which also gives the model of expected tokens)."""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from typing import Optional

from kinetic.engine.generate import Pass

WEIGHT = 0.2  # of the latest pass in the running seconds of its size
EXPLORE = 16  # passes in a row that leave out every guess they were offered, before one runs them all


class PassCosts:
    """Seconds a pass takes by its number of rows on one runner: a running mean for each size seen."""

    def __init__(self, known: dict[int, float] = {}) -> None:
        """known: seconds by size measured before (a .ktc file's execution profile), each where a first pass
        of its size would put it."""
        self._seconds: dict[int, float] = dict(known)
        self._sizes: list[int] = sorted(known)  # the sizes seen, in order
        self._declined = 0  # passes in a row that left out every guess offered

    def record(self, rows: int, seconds: float) -> None:
        before = self._seconds.get(rows)
        if before is None:
            self._sizes.insert(bisect_left(self._sizes, rows), rows)
            self._seconds[rows] = seconds
        else:
            self._seconds[rows] = before + WEIGHT * (seconds - before)

    def explored(self, taken: int, offered: int) -> int:
        """The guesses a pass runs, given `taken` of `offered` were worth it: all of them every EXPLORE-th pass
        in a row that would run none. Only passes that run guesses renew the costs of their sizes and the
        drafters' records of guesses kept, so without this one slow pass of a size (a kernel trying a slower
        way) or a run of misses (a sampled answer) would keep every later draft out."""
        self._declined = 0 if taken else self._declined + 1
        if self._declined < EXPLORE:
            return taken
        self._declined = 0
        return offered

    def of(self, rows: int) -> Optional[float]:
        """The seconds of a pass of `rows` rows, on the line through the nearest sizes seen (below the
        smallest, the smallest's); None before two sizes are known."""
        if len(self._sizes) < 2:
            return None
        at = min(max(bisect_left(self._sizes, rows), 1), len(self._sizes) - 1)
        below, above = self._sizes[at - 1], self._sizes[at]
        if rows <= below:
            return self._seconds[below]
        slope = (self._seconds[above] - self._seconds[below]) / (above - below)
        return self._seconds[below] + slope * (rows - below)


def drafts_worth_running(passes: list[Pass], costs: PassCosts) -> list[Pass]:
    """passes with each draft cut to the guesses worth their rows. Guess k of a draft gives a token only if
    the k - 1 before it were right too, which the pass expects with probability kept ** k; guesses are taken
    most likely first, as many as make the pass's expected tokens per second highest. Before the costs are
    known every guess runs."""
    rows = sum(len(step.rows) - step.guesses for step in passes)
    tokens = sum(1.0 for step in passes if step.rows[len(step.rows) - step.guesses - 1].logits)
    offers = sorted((-step.kept ** k, i, k) for i, step in enumerate(passes) for k in range(1, step.guesses + 1))
    if not offers or costs.of(rows) is None:
        return passes
    taken, best_rate = 0, tokens / costs.of(rows)
    for count, (value, _, _) in enumerate(offers, start=1):
        tokens -= value
        rate = tokens / costs.of(rows + count)
        if rate > best_rate:
            taken, best_rate = count, rate
    taken = costs.explored(taken, len(offers))
    kept_guesses = [0] * len(passes)
    for _, i, k in offers[:taken]:
        kept_guesses[i] = max(kept_guesses[i], k)
    return [step if kept_guesses[i] == step.guesses else
            dataclasses.replace(step, rows=step.rows[: len(step.rows) - step.guesses + kept_guesses[i]],
                                guesses=kept_guesses[i])
            for i, step in enumerate(passes)]
