"""Shortlist's kernels: a Q4_1 copy of the output layer with a radius per row, and the exact rows a token
needs (docs/exactness.md, section 7).

The copy scores a row at c = W'.x~ and its radius R bounds the rest: the exact kernel's score of the row is
at most c + R ||x~||, x~ the Q8_0 activations both kernels take. The exact scores come from the output
layer's own kernel (driver.rows_picked), so every logit given is the full layer's, bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kinetic_cpu.kernels.activations import f16_round, q8_0_group
from kinetic_cpu.kernels.driver import PAD, rows_picked
from kinetic_cpu.kernels.groups import GROUP

COPY = "Q4_1"
UNIT = 2.0**-24  # float32's unit roundoff
CHUNK = 32  # rows screened at once by their largest score or bound
REACH = 1.0 + 2.0**-20  # ||x~|| raised past the rounding of its float64 sum and of the float64 test c + R ||x~||


def gamma(n: int) -> float:
    """gamma_n = n u / (1 - n u): the relative error bound of n float32 roundings (Higham, Accuracy and
    Stability of Numerical Algorithms, 2002, section 3.1)."""
    return n * UNIT / (1 - n * UNIT)


def copy_rows(raw_q8_0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # raw_q8_0: [rows, k / 32 * 34] uint8
    """-> Q8_0 rows copied as raw Q4_1 blocks [rows, k / 32 * 20] uint8, and each row's radius [rows] float32."""
    n_rows, n_blocks = raw_q8_0.shape[0], raw_q8_0.shape[1] // 34
    blocks = raw_q8_0.reshape(n_rows, n_blocks, 34)
    d = np.ascontiguousarray(blocks[:, :, :2]).view(np.float16)[:, :, 0].astype(np.float32)
    nibbles, scales, sums = np.empty((n_rows, n_blocks * 16), np.uint8), np.empty((n_rows, n_blocks, 2), np.float32), np.empty((n_rows, 4))
    _quantize_copy(d, blocks[:, :, 2:].view(np.int8), nibbles, scales, sums)
    raw = np.empty((n_rows, n_blocks, 20), np.uint8)
    raw[:, :, :4] = scales.astype(np.float16).view(np.uint8)
    raw[:, :, 4:] = nibbles.reshape(n_rows, n_blocks, 16)
    error, exact, scaled, minimums = np.sqrt(sums).T
    # the exact kernel rounds each term of its sum at most n_blocks + 4 times (a product, one fma per block of
    # its lane, three additions of lanes); the copy's kernel 2 n_blocks + 4 (two fmas per block and a product)
    radius = error * (1 + 2.0**-30) + gamma(n_blocks + 4) * exact + gamma(2 * n_blocks + 4) * (scaled + minimums)
    return raw.reshape(n_rows, -1), np.nextafter(radius.astype(np.float32), np.float32(np.inf))


@njit(cache=True, nogil=True, parallel=True)
def _quantize_copy(d_w, q_w, nibbles, scales, sums):  # d_w: [rows, blocks] float32; q_w: [rows, blocks, 32] int8
    """Each Q8_0 block of 32 (weights d_w q_w, exact in float32) as Q4_1 from its least and largest weight:
    d = (hi - lo) / 15 and m = lo as float16, q = the nearest of 0 .. 15; sums[r] = ||W - W'||^2, ||W||^2,
    ||d q||^2 and ||m||^2 (m once per weight), in float64, where every W - W' is exact."""
    for r in prange(d_w.shape[0]):
        error = exact = scaled = minimums = 0.0
        block = np.empty(32, np.float32)
        for b in range(d_w.shape[1]):
            for j in range(32):
                block[j] = d_w[r, b] * np.float32(q_w[r, b, j])
            lo = hi = block[0]
            for j in range(1, 32):  # a loop, not min() and max(): numba compiles array reductions slowly
                lo, hi = min(lo, block[j]), max(hi, block[j])
            d, m = f16_round(np.float32((hi - lo) / np.float32(15.0))), f16_round(lo)
            scales[r, b, 0], scales[r, b, 1] = d, m
            for j in range(32):
                q = 0 if d == 0 else min(15, max(0, int(np.rint((block[j] - m) / d))))
                if j < 16:
                    nibbles[r, 16 * b + j] = q
                else:
                    nibbles[r, 16 * b + j - 16] |= q << 4
                e = np.float64(block[j]) - (np.float64(d) * q + np.float64(m))
                error += e * e
                exact += np.float64(block[j]) ** 2
                scaled += (np.float64(d) * q) ** 2
                minimums += np.float64(m) ** 2
        sums[r, 0], sums[r, 1], sums[r, 2], sums[r, 3] = error, exact, scaled, minimums


@njit(cache=True, nogil=True)
def reaches(q, d):  # q: [n, k] int8 in q8_0_group's layout; d: [n, k / 32] float32
    """[n] float64: each token's ||x~|| (x~ = d * q, block by block), raised by REACH."""
    n, n_blocks = d.shape
    out = np.empty(n)
    for t in range(n):
        total = 0.0
        for b in range(n_blocks):
            first, width = q8_0_group(b, n_blocks)
            squares = 0
            for i in range(8):  # run i of block b: 4 bytes at 32 first + 4 (width i + b - first)
                at = 32 * first + 4 * (width * i + b - first)
                for j in range(4):
                    squares += np.int64(q[t, at + j]) ** 2
            total += np.float64(d[t, b]) ** 2 * squares
        out[t] = np.sqrt(total) * REACH
    return out


@njit(cache=True, nogil=True)
def best_rows(scores, k):  # scores: [V] float32
    """The rows of the k largest scores (ties: any), screening CHUNK rows at a time."""
    best, values = np.zeros(k, np.int64), np.full(k, -np.inf, np.float32)
    floor = -np.inf
    for first in range(0, scores.shape[0] // CHUNK * CHUNK, CHUNK):
        above = 0
        for r in range(first, first + CHUNK):  # a count, not a test that exits early: the loop vectorizes
            above += np.float64(scores[r]) > floor
        if above:
            _insert(scores, first, first + CHUNK, best, values)
            floor = np.float64(values[k - 1])
    _insert(scores, scores.shape[0] // CHUNK * CHUNK, scores.shape[0], best, values)
    return best


@njit(cache=True, nogil=True)
def _insert(scores, first, last, best, values):  # best, values: [k], values descending
    """Rows first .. last - 1 into the k best."""
    k = best.shape[0]
    for r in range(first, last):
        score = scores[r]
        if score > values[k - 1]:
            i = k - 1
            while i > 0 and values[i - 1] < score:
                best[i], values[i] = best[i - 1], values[i - 1]
                i -= 1
            best[i], values[i] = r, score


@njit(cache=True, nogil=True)
def reaching_rows(scores, radius, reach, floor, given, picked):
    """picked[:count] = the rows not yet given (-inf in given) whose bound reaches floor: c + R ||x~|| >=
    floor, in float64; -> count."""
    # scores, radius, given: [V] float32 (copy scores, radii, the exact logits given so far); picked: [V] int64
    count = 0
    for first in range(0, scores.shape[0] // CHUNK * CHUNK, CHUNK):
        reached = 0
        for r in range(first, first + CHUNK):  # vectorized, as in best_rows
            reached += np.float64(scores[r]) + np.float64(radius[r]) * reach >= floor
        if reached:
            count = _reaching(scores, radius, reach, floor, given, first, first + CHUNK, picked, count)
    return _reaching(scores, radius, reach, floor, given, scores.shape[0] // CHUNK * CHUNK, scores.shape[0], picked, count)


@njit(cache=True, nogil=True)
def _reaching(scores, radius, reach, floor, given, first, last, picked, count):
    for r in range(first, last):
        if given[r] == -np.inf and np.float64(scores[r]) + np.float64(radius[r]) * reach >= floor:
            picked[count] = r
            count += 1
    return count


def rows_at(w, acts, picked, out, threads: int) -> None:  # picked: [m] int64; out: [n_tokens, rows] float32
    """out[:, r] for each row r in picked (ascending), by the layer's own kernel, on `threads` threads (1: this
    one)."""
    if threads == 1:
        _rows_serial(w, acts, picked, out)
    else:
        _rows_parallel(w, acts, picked, out, threads)


@njit(cache=True, nogil=True)
def _rows_serial(w, acts, picked, out):
    acc, group = np.empty((out.shape[0] + PAD, 8), np.float32), np.empty((out.shape[0], GROUP), np.float32)
    rows_picked(w, picked, acts, acc, group, out)


@njit(cache=True, nogil=True, parallel=True)
def _rows_parallel(w, acts, picked, out, threads):
    workers = max(1, min(threads, picked.shape[0]))
    for worker in prange(workers):
        _rows_serial(w, acts, picked[worker * picked.shape[0] // workers : (worker + 1) * picked.shape[0] // workers], out)
