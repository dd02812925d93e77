"""Shortlist: a token's best logits without reading the whole output layer (docs/exactness.md, section 8).

A 4-bit copy of a Q8_0 output layer holds each weight's high nibble; every row's score through the copy, plus
what the low nibbles can add at most, plus a proven bound on rounding, is an upper bound on the row's exact
score, and one pass of the Q4_1 kernel computes it. The exact scores of the best-looking rows, computed by the
layer's own kernel, give a floor; exact scores are then computed for every row whose upper bound reaches the
floor, and the rest are left at -inf. The rows a sampler reads (the k largest) and their scores are the full
layer's, bit for bit.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numba
import numpy as np

from kinetic_cpu.kernels.activations import q8_0_group
from kinetic_cpu.kernels.matmul import Matrix

Q4_1, Q8_0 = 3, 8  # GGUF type ids
Q8_0_BYTES, Q4_1_BYTES = 34, 20  # per block of 32: float16 d (Q4_1: d, then m), then the quants
UNIT = 2.0**-24  # float32's unit roundoff
RETRY = 64  # tokens between tries of the way that was slower
WEIGHT = 0.1  # of a new time in the running mean


class Payoff:
    """Which way a token's best logits cost less here: through the Shortlist or the whole layer. Both give the
    same picks, so the choice changes no answer; it follows running means of seconds per token, starting with
    one of each, and tries the slower way again every RETRY tokens (text and load change the cost)."""

    def __init__(self):
        self.seconds: dict[bool, Optional[float]] = {True: None, False: None}
        self.tokens = 0

    def shortlist(self) -> bool:
        """Whether the next token goes through the Shortlist."""
        self.tokens += 1
        short, whole = self.seconds[True], self.seconds[False]
        if short is None or whole is None:
            return whole is not None
        return (short < whole) != (self.tokens % RETRY == 0)

    def record(self, shortlisted: bool, seconds: float) -> None:
        mean = self.seconds[shortlisted]
        self.seconds[shortlisted] = seconds if mean is None else mean + WEIGHT * (seconds - mean)


class Shortlist:
    """The copy of one Q8_0 output layer, and the product that keeps only the rows that can be a token's best."""

    def __init__(self, layer: Matrix, copy: np.ndarray, largest_scale: np.ndarray):
        # copy: [rows, blocks * 20] uint8 Q4_1; largest_scale: [rows] float32, the largest d of each row
        self.layer, self.copy, self.largest_scale = layer, Matrix(copy, Q4_1), largest_scale
        self.n_blocks = layer.k // 32
        self.rounding = 1024 * (self.n_blocks + 4) * UNIT  # docs/exactness.md, section 8

    @classmethod
    def of(cls, layer: Matrix) -> Optional[Shortlist]:
        """The layer's Shortlist, or None for a layer it does not serve: not Q8_0, or a scale d that is
        negative (the bound takes every d >= 0) or too large for the copy's 16 d (float16 tops at 65504)."""
        if layer.type.id != Q8_0:
            return None
        copy, largest = split_q8_0(layer.weight)
        if copy is None:
            return None
        return cls(layer, copy, largest)

    def logits(self, x: np.ndarray, acts: tuple, best: Sequence[int]) -> np.ndarray:
        """[n, rows] float32: for token t, exact scores of every row that can be among its best[t] and
        -inf for the others. x: [n, k] float32; acts: x's Q8_0 activations (matmul.activations)."""
        n = len(x)
        upper = self.upper_bounds(acts, n)
        floors = [scores.min() for scores in self._exact(acts, [_largest(upper[t], best[t]) for t in range(n)])]
        chosen = [np.flatnonzero(upper[t] >= floor) if np.isfinite(floor) else np.arange(self.layer.rows)
                  for t, floor in enumerate(floors)]  # a NaN or infinite score: every row
        out = np.full((n, self.layer.rows), -np.inf, np.float32)
        for t, scores in enumerate(self._exact(acts, chosen)):
            out[t, chosen[t]] = scores
        return out

    def upper_bounds(self, acts: tuple, n: int) -> np.ndarray:
        """[n, rows] float32: no row's exact score is above its bound. The copy's Q4_1 blocks (d = 16 d_w,
        m = d_w, quants (q >> 4) + 8) meet the activations with each block sum replaced by 15 P - 128 S (P: the
        sum of the block's positive quants, S: of all of them), so one pass gives sum_b d_w d_x (16 (q >> 4) . x
        + 15 P): the high nibbles' score and the most the low ones, in [0, 15], can add."""
        q, d, sums = acts
        positive, negative = signed_block_sums(q, self.n_blocks)
        shifted = (15 * positive - 128 * sums).astype(np.int32)
        upper = self.copy.product((q, d, shifted), n, numba.get_num_threads())
        spread = (d.astype(np.float64) * (positive + negative)).sum(axis=1)  # [n]: sum_b d_x |x_q|
        upper += (self.rounding * spread).astype(np.float32)[:, None] * self.largest_scale[None, :]
        return upper

    def _exact(self, acts: tuple, rows: list[np.ndarray]) -> list[np.ndarray]:
        """Token t's exact scores of rows[t], by the layer's own kernel on those rows of the layer."""
        union, where = np.unique(np.concatenate(rows), return_inverse=True)
        part = Matrix(np.take(self.layer.weight, union, axis=0), Q8_0)  # take: thrice as fast as [union]
        scores = part.product(acts, len(rows), numba.get_num_threads() if len(union) > 4096 else 1)
        ends = np.cumsum([len(r) for r in rows])
        return [scores[t, where[end - len(r) : end]] for t, (r, end) in enumerate(zip(rows, ends))]


def _largest(upper: np.ndarray, k: int) -> np.ndarray:
    """The k rows of largest upper bound: their exact scores give the floor."""
    # upper: [rows] float32
    if k == 1:
        return np.array([int(np.argmax(upper))])
    return np.argpartition(upper, -k)[-k:]


def split_q8_0(raw: np.ndarray) -> tuple[Optional[np.ndarray], np.ndarray]:
    """The Q4_1 copy of Q8_0 rows (raw: [rows, blocks * 34] uint8; None where a scale is negative or 16 times
    it overflows float16) and each row's largest scale [rows] float32. Each weight d q is 16 d (q >> 4) plus
    d (q & 15), and q & 15 lies in [0, 15]."""
    n_rows, n_blocks = raw.shape[0], raw.shape[1] // Q8_0_BYTES
    d = np.ascontiguousarray(raw.reshape(n_rows, n_blocks, Q8_0_BYTES)[:, :, :2]).view(np.float16)[..., 0]
    if not ((d >= 0) & (d < 4096)).all():
        return None, np.empty(0, np.float32)
    copy = np.empty((n_rows, n_blocks * Q4_1_BYTES), np.uint8)
    scales = (d * np.float16(16)).view(np.uint16), d.view(np.uint16)  # 16 d is exact: a power of two
    _split_rows(raw, scales[0], scales[1], copy)
    return copy, d.max(axis=1).astype(np.float32)


@numba.njit(cache=True, nogil=True, parallel=True)
def _split_rows(raw, sixteen_d, d, copy):
    """Each Q8_0 block (raw) as a Q4_1 block of copy: d' = 16 d, m = d (float16 bits given), then 16 bytes of
    nibbles (q >> 4) + 8, ggml's layout (x[j] in byte j's low nibble, x[j + 16] in its high one)."""
    for r in numba.prange(raw.shape[0]):
        for b in range(d.shape[1]):
            at, to = b * 34, b * 20
            copy[r, to], copy[r, to + 1] = sixteen_d[r, b] & 0xFF, sixteen_d[r, b] >> 8
            copy[r, to + 2], copy[r, to + 3] = d[r, b] & 0xFF, d[r, b] >> 8
            for j in range(16):
                low = ((np.int8(raw[r, at + 2 + j]) >> 4) + 8) & 0xF
                high = ((np.int8(raw[r, at + 18 + j]) >> 4) + 8) & 0xF
                copy[r, to + 4 + j] = low | (high << 4)


@numba.njit(cache=True, nogil=True)
def signed_block_sums(q: np.ndarray, n_blocks: int) -> tuple[np.ndarray, np.ndarray]:
    """The sums of each block's positive quants and of its negative quants' magnitudes, [n, blocks] int32
    each, from Q8_0 activations q [n, k] int8 in their group layout (activations.q8_0_group)."""
    n = q.shape[0]
    positive, negative = np.zeros((n, n_blocks), np.int32), np.zeros((n, n_blocks), np.int32)
    for t in range(n):
        for b in range(n_blocks):
            first, width = q8_0_group(b, n_blocks)
            for i in range(8):  # run i of block b: 4 bytes at 32 first + 4 width i + 4 (b - first)
                at = 32 * first + 4 * width * i + 4 * (b - first)
                for j in range(4):
                    value = np.int32(q[t, at + j])
                    if value > 0:
                        positive[t, b] += value
                    else:
                        negative[t, b] -= value
    return positive, negative
