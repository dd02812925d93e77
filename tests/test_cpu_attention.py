"""The CPU attention kernels (kinetic_cpu.kernels.attention): bit for bit the plain float64 loops in order.

Scores sum q[g, j] * k[j, t] over j in order (float16 values: each product exact); weighted sums add
w[g, t] * v[t, j] over t in order, multiplying then adding. numpy's elementwise operations round each step
as those loops do, so the references below are the definition, and the kernels must match them exactly, for
every head count a call can take (and the unrolled bodies for 1 .. IN_FLIGHT), head sizes with and without
a vector tail, and position counts and offsets that end mid-vector.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from kinetic_cpu import ops
from kinetic_cpu.kernels import attention

# A kernel call takes 1 .. IN_FLIGHT heads (16 with AVX-512, 4 without); ops groups larger counts.
HEADS = sorted(h for h in {1, 2, 3, 5, attention.IN_FLIGHT - 1, attention.IN_FLIGHT} if h <= attention.IN_FLIGHT)
SHAPES = [(64, 37, 0), (24, 9, 5), (256, 70, 3), (8, 1, 0), (16, 30, 21)]  # (head size, positions, first)


@numba.njit
def kernel_scores(q, keys, first, n, out):
    attention.scores(q, keys, first, n, out)


@numba.njit
def kernel_weighted(w, n, values, out):
    attention.weighted(w, n, values, out)


def halves(rng, shape) -> np.ndarray:
    return ops.to_half(rng.standard_normal(shape).astype(np.float32))


def blocked(keys) -> np.ndarray:  # keys: [hd, positions] -> [blocks, hd, KEY_BLOCK], as the key cache holds them
    hd, n = keys.shape
    out = np.full((-(-n // attention.KEY_BLOCK), hd, attention.KEY_BLOCK), np.nan, np.float32)  # never read
    for p in range(n):
        out[p // attention.KEY_BLOCK, :, p % attention.KEY_BLOCK] = keys[:, p]
    return out


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("hd, n, first", SHAPES)
def test_scores_are_the_ordered_sums(heads, hd, n, first):
    rng = np.random.default_rng(heads * 1000 + hd)
    q, keys = halves(rng, (heads, hd)).astype(np.float64), halves(rng, (hd, first + n + 3))
    want = np.zeros((heads, n))
    for j in range(hd):
        want = want + q[:, j, None] * keys[j, first : first + n].astype(np.float64)
    out = np.full((heads, n + 2), 7.0)
    kernel_scores(q, blocked(keys), first, n, out)
    assert np.array_equal(out[:, :n], want)
    assert (out[:, n:] == 7.0).all()  # nothing written past n


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("hd, n, first", SHAPES)
def test_weighted_sums_are_the_ordered_sums(heads, hd, n, first):
    rng = np.random.default_rng(heads * 1000 + hd + 1)
    w = rng.random((heads, n + 3))
    cache = halves(rng, (first + n, 3, hd))  # [positions, KV heads, hd]: a position's rows are apart
    values = cache[first:, 1]
    want = np.zeros((heads, hd))
    for t in range(n):
        want = want + w[:, t, None] * values[t].astype(np.float64)
    out = np.full((heads, hd), 7.0)
    kernel_weighted(w, n, values, out)
    assert np.array_equal(out, want)


@numba.njit
def kernel_softmax(scores, n, scale, totals):
    attention.softmax(scores, n, scale, totals)


def ulps(a, b) -> np.ndarray:
    """How many float64 steps apart a and b are (both finite, same sign)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("n", [1, 7, 8, 37])
def test_softmax_sums_its_exps_in_order(heads, n):
    rng = np.random.default_rng(heads * 100 + n)
    scores = np.full((heads, n + 3), 5.0)
    scores[:, :n] = rng.standard_normal((heads, n)) * 30
    scores[0, 0] = -np.inf if n > 1 else 0.0  # a masked position's score: e^-inf = 0
    scaled = scores[:, :n] * 0.125
    want = np.exp(scaled - scaled.max(axis=1, keepdims=True))
    totals = np.zeros(heads)
    kernel_softmax(scores, n, 0.125, totals)
    assert (ulps(scores[:, :n], want) <= 2).all()  # exponential.exp: within 2 ulp of libm
    for g in range(heads):
        total = 0.0
        for value in scores[g, :n]:
            total += value
        assert totals[g] == total
    assert (scores[:, n:] == 5.0).all()
