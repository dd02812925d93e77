"""Speeds leave kernel compilation out: it happens once per machine, and is reported on its own line."""

from __future__ import annotations

import time

import numba
import numpy as np

from kinetic.engine.generate import Generation, Timings

N_VOCAB = 8
COMPILING = 0.3  # seconds the fake runner's first pass spends "compiling"


class Sequence:
    n_tokens = 0

    def truncate(self, n: int) -> None:
        self.n_tokens = min(self.n_tokens, n)


class CompilingRunner:
    """A runner whose first pass compiles its kernels (it sleeps and says so); every pass picks token 1."""

    device_name = "the test device"
    context_note = None

    def __init__(self):
        self.compile_seconds = 0.0

    def forward(self, rows):
        if self.compile_seconds == 0.0:
            time.sleep(COMPILING)
            self.compile_seconds = COMPILING
        rows[0].sequence.n_tokens += len(rows)
        logits = np.zeros((sum(row.logits for row in rows), N_VOCAB), np.float32)
        logits[:, 1] = 1.0
        return logits


def test_compilation_is_timed_apart_from_the_prompt():
    generation = Generation(CompilingRunner(), Sequence(), [1, 2, 3], lambda logits, history, i: int(logits.argmax()),
                            max_tokens=2, context_length=64, stop_ids=frozenset())
    assert list(generation) == [1, 1]
    timings = generation.timings
    assert timings.compile_seconds == COMPILING
    assert timings.prompt_seconds < COMPILING / 2  # the pass itself takes no time; its compilation is not counted
    assert timings.compile_line() is None  # under a second: not worth a line


def test_the_compile_line():
    assert Timings(compile_seconds=31.2).compile_line() == "compiling kernels, once: 31 s"
    assert Timings(compile_seconds=0.4).compile_line() is None


def test_the_cpu_compile_clock_runs_only_while_numba_compiles():
    from kinetic_cpu.compile_clock import CLOCK

    @numba.njit  # not cached: it compiles on its first call
    def fresh(x):
        return x + 1

    before = CLOCK.seconds
    assert fresh(1) == 2
    compiled = CLOCK.seconds
    assert compiled > before
    assert fresh(2) == 3
    assert CLOCK.seconds == compiled
