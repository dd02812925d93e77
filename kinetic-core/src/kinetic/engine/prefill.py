"""Zero Wait: a prompt run ahead of its request, in the whole batches the request would run first, from
where it would start. The request then continues from there with exactly the batches it would have run
itself, so its answer is the same (docs/exactness.md, section 3); the run gives way after every batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from kinetic.contracts.device import DeviceSequence, Row
from kinetic.engine.generate import PROMPT_GRID, Pass, Steps, prompt_batches


def ahead_end(start: int, upto: int, grid: int = PROMPT_GRID) -> int:
    """Where a run ahead from start stops: the last batch boundary of the grid at or before upto."""
    return max(start, upto // grid * grid)


@dataclass
class Prefill:
    """tokens[start:end] of a prompt to come, run on seq (which holds tokens[:start]) a grid batch a pass;
    give_way() is asked before each batch, and ends the run when true."""

    seq: DeviceSequence
    tokens: Sequence[int]
    start: int
    end: int
    give_way: Callable[[], bool]

    def steps(self) -> Steps:
        for start, stop in prompt_batches(self.start, self.end):
            if self.give_way():
                return
            yield Pass([Row(self.seq, int(self.tokens[p]), p, parent=i - 1) for i, p in enumerate(range(start, stop))])
