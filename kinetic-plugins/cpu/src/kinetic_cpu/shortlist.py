"""Shortlist: the output layer's logits that can be among a token's k largest, computed exactly, and the
other rows skipped (docs/exactness.md, section 7). A Q4_1 copy of the layer scores every row for about 60%
of the layer's bytes; the layer's own kernel then scores the rows that can win."""

from __future__ import annotations

import mmap
import tempfile
import time
from typing import Sequence

import numba
import numpy as np

from kinetic.contracts import TensorType
from kinetic.plugins import plugins
from kinetic_cpu import compile_clock
from kinetic_cpu.kernels import shortlist
from kinetic_cpu.kernels.block32 import keep_in_runs
from kinetic_cpu.kernels.matmul import KEEP_BYTES, SERIAL_BYTES, Matrix, activations
from kinetic_cpu.mapped_pages import drop_pages

EXACT_TYPE = "Q8_0"  # the output layers it copies: their kernel takes the copy's activations, its rounding bounded
RETRY = 32  # passes between tries of the way that was slower
SHARED_ROWS = 64  # exact rows from which the threads share them


class Shortlist:
    """The output layer `exact` (its raw Q8_0 weights `weight` [rows, row_bytes] uint8) with its copy."""

    def __init__(self, exact: Matrix, weight: np.ndarray):
        self.exact = exact
        copy_type = plugins().tensor_types[shortlist.COPY]
        kept = np.empty((exact.rows, copy_type.nbytes(exact.k)), np.uint8)
        self.radius = np.empty(exact.rows, np.float32)
        step = max(1, KEEP_BYTES // weight.shape[1])
        for start in range(0, exact.rows, step):
            part = slice(start, start + step)
            raw, self.radius[part] = shortlist.copy_rows(weight[part])
            keep_in_runs(raw, shortlist.COPY, kept[part])
            drop_pages(weight[part])
        self.copy = Matrix(kept, copy_type.id, kept=True)
        self._seconds: dict[tuple[int, int], list] = {}  # (top k, rows) -> running seconds: full layer, copy
        self._passes = 0
        # the copy's way once, on zeros, whose bounds reach every row (so exact rows run on every thread too):
        # its kernels load from numba's cache now, and its first timed passes time its speed, not the loading
        self.shortlisted(np.zeros((1, exact.k), np.float32), [1])

    @staticmethod
    def takes(kind: TensorType) -> bool:
        """Whether it takes output layers of this type."""
        return kind.name == EXACT_TYPE

    def logits(self, x: np.ndarray, tops: Sequence[int]) -> np.ndarray:  # x: [n, k] float32
        """[n, rows] float32: the layer's logits of x, where tops[t] > 0 (Row.top) those that can be among row
        t's tops[t] largest and -inf for the others, by the copy or the full layer, whichever recent passes of
        that many such rows and that top took less time for (_copy_first; the slower is tried again every RETRY
        passes)."""
        short = [t for t, k in enumerate(tops) if k]
        if not short:
            return self.exact(x)
        top, n = max(tops), len(short)
        times = self._seconds.setdefault((top, n), [None, None])  # full layer, copy
        self._passes += 1
        copied = self._copy_first(top, n) != (self._passes % RETRY == 0)
        started, compiled = time.perf_counter(), compile_clock.CLOCK.seconds
        out = self.exact(x) if not copied else self._with_full_rows(x, tops, short)
        if compile_clock.CLOCK.seconds == compiled:  # a pass that compiled a kernel says nothing of its speed
            seconds, before = time.perf_counter() - started, times[copied]
            times[copied] = seconds if before is None else before + (seconds - before) / 4
        return out

    def _copy_first(self, top: int, n: int) -> bool:
        """Whether n rows of this top take the copy: where both ways have times, the faster; else the full
        layer first, then the copy, which several rows try only once it was faster for fewer: each row's exact
        scores are its own, so the copy's part of a pass grows with its rows."""
        full, copy = self._seconds[(top, n)]
        if full is None:
            return False
        if copy is not None:
            return copy <= full
        return n == 1 or any(k == top and m < n and c is not None and f is not None and c <= f
                             for (k, m), (f, c) in self._seconds.items())

    def _with_full_rows(self, x: np.ndarray, tops: Sequence[int], short: list[int]) -> np.ndarray:
        if len(short) == len(x):
            return self.shortlisted(x, tops)
        out = self.exact(x)
        out[short] = self.shortlisted(x[short], [tops[t] for t in short])
        return out

    def shortlisted(self, x: np.ndarray, tops: Sequence[int]) -> np.ndarray:  # x: [n, k] float32
        """[n, rows] float32: row t's tops[t] largest logits and every logit that could be among them, as the
        full layer gives them; -inf for the others."""
        acts = activations(self.exact.activations, x)
        reach = shortlist.reaches(acts[0], acts[1])
        if not np.isfinite(reach).all():  # no bound holds: the full layer
            return self.exact(x, acts)
        scores = self.copy(x, acts)
        out = np.full((len(x), self.exact.rows), -np.inf, np.float32)
        picked = np.empty(self.exact.rows, np.int64)
        for t, k in enumerate(tops):
            one, given = tuple(a[t : t + 1] for a in acts), out[t : t + 1]
            best = shortlist.best_rows(scores[t], k)
            self._exact_rows(one, np.sort(best), given)
            count = shortlist.reaching_rows(scores[t], self.radius, reach[t], given[0, best].min(), given[0], picked)
            self._exact_rows(one, picked[:count], given)
        return out

    def _exact_rows(self, acts: tuple, rows: np.ndarray, out: np.ndarray) -> None:  # rows: ascending
        """out[:, rows] by the layer's own kernel, on every thread where there are enough rows to share."""
        threads = numba.get_num_threads() if len(rows) >= SHARED_ROWS else 1
        shortlist.rows_at(self.exact.blocks, acts, rows, out, threads)


def compile_kernels() -> None:
    """Shortlist's kernels compiled (or loaded from numba's cache) for the types a model's output layer gives
    them: small Q8_0 layers read from a file map, as a model's is, one whose products run on one thread and one
    large enough to share them (matmul.SERIAL_BYTES), each scoring a row and a batch."""
    kind = plugins().tensor_types[EXACT_TYPE]
    for rows, k in ((2 * SHARED_ROWS, kind.block_size), (SERIAL_BYTES // kind.block_size, 8 * kind.block_size)):
        row_bytes = k // kind.block_size * kind.type_size
        with tempfile.TemporaryFile() as file:
            file.write(bytes(rows * row_bytes))
            file.flush()
            mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
            weight = np.frombuffer(mapped, np.uint8).reshape(rows, row_bytes)
            Shortlist(Matrix(weight, kind.id), weight).shortlisted(np.zeros((SHARED_ROWS, k), np.float32),
                                                                   [1] * SHARED_ROWS)
