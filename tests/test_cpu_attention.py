"""The CPU attention kernels (kinetic_cpu.kernels.attention): bit for bit the plain float64 loops in order.

Scores sum q[g, j] * k[j, t] over j in order (float16 values: each product exact); weighted sums add
w[g, t] * v[t, j] over t in order, multiplying then adding. numpy's elementwise operations round each step
as those loops do, so the references below are the definition, and the kernels must match them exactly, for
every head count a call can take (HEAD_COUNTS, each compiled for its own count), head sizes with and without a vector
tail, and position counts and offsets that end mid-vector. ops.attend pads a KV head's group of query heads
up to such a count; a head's output is the same bits whatever group it is in. With a q8_0 cache the kernels read its
int8 blocks: the same sums over the values d * q the blocks stand for (exact in float64).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from kinetic.contracts.device import cache_rotations
from kinetic.visibility import visible_spans
from kinetic_cpu import ops
from kinetic_cpu.cache import quantize_q8_0
from kinetic_cpu.kernels import attention

# A kernel call takes a power of two of heads up to IN_FLIGHT (16 with AVX-512, 4 without).
HEADS = attention.HEAD_COUNTS
SHAPES = [(64, 37, 0), (24, 9, 5), (256, 70, 3), (8, 1, 0), (16, 30, 21)]  # (head size, positions, first)
Q8_SHAPES = [(64, 37, 0), (32, 9, 5), (256, 70, 3), (32, 1, 0), (96, 30, 21)]  # q8_0: whole blocks of 32
CASES = [("f16", *shape) for shape in SHAPES] + [("q8_0", *shape) for shape in Q8_SHAPES]


@numba.njit
def kernel_scores(q, keys, first, n, out, heads):
    attention.scores(q, keys, first, n, out, heads)


@numba.njit
def kernel_weighted(w, n, values, out, heads):
    attention.weighted(w, n, values, out, heads)


def halves(rng, shape) -> np.ndarray:
    return ops.to_half(rng.standard_normal(shape).astype(np.float32))


def cached(rng, shape, cache_type) -> tuple[np.ndarray, np.ndarray]:
    """Random rows ([..., hd]) as a cache of this type keeps them, and the float64 values they stand for."""
    x = rng.standard_normal(shape).astype(np.float32)
    if cache_type == "f16":
        return ops.half_bits_of(x), ops.to_half(x).astype(np.float64)
    stored = quantize_q8_0(x)
    blocks = stored.reshape(stored.shape[:-1] + (-1, 34))
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float64)
    return stored, (scales * blocks[..., 2:]).reshape(shape)


def blocked(keys) -> np.ndarray:  # keys: [width, positions] -> [blocks, width, KEY_BLOCK], as the key cache holds them
    hd, n = keys.shape
    never_read = np.float16(np.nan).view(np.uint16) if keys.dtype == np.uint16 else 127
    out = np.full((-(-n // attention.KEY_BLOCK), hd, attention.KEY_BLOCK), never_read, keys.dtype)
    for p in range(n):
        out[p // attention.KEY_BLOCK, :, p % attention.KEY_BLOCK] = keys[:, p]
    return out


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("cache_type, hd, n, first", CASES)
def test_scores_are_the_ordered_sums(heads, cache_type, hd, n, first):
    rng = np.random.default_rng(heads * 1000 + hd)
    q = halves(rng, (heads, hd)).astype(np.float64)
    keys, exact = cached(rng, (first + n + 3, hd), cache_type)
    want = np.zeros((heads, n))
    for j in range(hd):
        want = want + q[:, j, None] * exact[first : first + n, j]
    out = np.full((heads, n + 2), 7.0)
    kernel_scores(q, blocked(np.ascontiguousarray(keys.T)), first, n, out, attention.heads(heads))
    assert np.array_equal(out[:, :n], want)
    assert (out[:, n:] == 7.0).all()  # nothing written past n


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("cache_type, hd, n, first", CASES)
def test_weighted_sums_are_the_ordered_sums(heads, cache_type, hd, n, first):
    rng = np.random.default_rng(heads * 1000 + hd + 1)
    w = rng.random((heads, n + 3))
    cache, exact = cached(rng, (first + n, 3, hd), cache_type)  # [positions, KV heads, hd]: a position's rows apart
    want = np.zeros((heads, hd))
    for t in range(n):
        want = want + w[:, t, None] * exact[first + t, 1]
    out = np.full((heads, hd), 7.0)
    kernel_weighted(w, n, cache[first:, 1], out, attention.heads(heads))
    assert np.array_equal(out, want)


@numba.njit
def kernel_softmax(scores, n, scale, totals, heads):
    attention.softmax(scores, n, scale, totals, heads)


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
    kernel_softmax(scores, n, 0.125, totals, attention.heads(heads))
    assert (ulps(scores[:, :n], want) <= 2).all()  # exponential.exp: within 2 ulp of libm
    for g in range(heads):
        total = 0.0
        for value in scores[g, :n]:
            total += value
        assert totals[g] == total
    assert (scores[:, n:] == 5.0).all()


def sylvester(n: int) -> np.ndarray:
    """llama.cpp's rotation matrix (ggml_gen_hadamard): H_2s = [[H_s, H_s], [H_s, -H_s]], over sqrt(n)."""
    h = np.ones((1, 1))
    while len(h) < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


@pytest.mark.parametrize("n", [64, 128, 256])
def test_rotation_is_llama_cpps_walsh_hadamard_matrix(n):
    x = np.random.default_rng(n).standard_normal((3, 2 * n)).astype(np.float32)
    turned = ops.rotated(x, n)
    want = (x.reshape(3, 2, n).astype(np.float64) @ sylvester(n)).reshape(3, 2 * n)
    assert np.abs(turned - want).max() < 1e-6
    assert np.abs(ops.rotated(turned, n) - x).max() < 1e-5  # its own inverse
    assert np.array_equal(ops.rotated(x[1:2], n), turned[1:2])  # a row on its own gives the same bits


@pytest.mark.parametrize("head_dim, caches, turns", [
    (64, ("q8_0", "q8_0"), (64, 64)), (128, ("q8_0", "f16"), (128, 0)), (256, ("f16", "q8_0"), (0, 64)),
    (256, ("q8_0", "q8_0"), (256, 64)), (96, ("q8_0", "q8_0"), (0, 0)), (64, ("f16", "f16"), (0, 0))])
def test_quantized_caches_turn_as_llama_cpps(head_dim, caches, turns):
    assert cache_rotations(head_dim, caches) == turns


@pytest.mark.parametrize("group", [1, 3, 7, attention.IN_FLIGHT, attention.IN_FLIGHT + 3])
@pytest.mark.parametrize("window", [0, 5])
def test_a_heads_output_is_the_same_in_any_group(group, window):
    """Query heads sharing a KV head (padded up to a kernel's head count, cut in calls of IN_FLIGHT) give
    the bits each gives with a KV head of its own."""
    rng = np.random.default_rng(group)
    n_kv, hd, n, ctx = 2, 24, 3, 2 * attention.KEY_BLOCK
    q = halves(rng, (n, n_kv * group, hd))
    keys, values = (ops.half_bits_of(halves(rng, shape)) for shape in ((n_kv, ctx, hd), (ctx, n_kv, hd)))
    positions = np.array([9, 10, 11])

    def attend(keys, values):  # keys: [kv heads, ctx, hd], values: [ctx, kv heads, hd]
        k_cache = np.stack([blocked(np.ascontiguousarray(k.T)) for k in keys])
        firsts, lasts = visible_spans(positions, window, True, int(positions.max()))
        return attend_alone(q, (k_cache, np.ascontiguousarray(values)), firsts, lasts, 0.25)

    own = attend(np.repeat(keys, group, axis=0), np.repeat(values, group, axis=1))
    assert np.array_equal(attend(keys, values), own)


def attend_alone(q, cache: tuple[np.ndarray, np.ndarray], firsts, lasts, scale) -> np.ndarray:
    """ops.attend of rows q over one cache (keys, values)."""
    return ops.attend(q, *cache, ops.cache_addresses([cache]), np.zeros(len(q), np.int64), firsts, lasts, scale)


def random_cache(rng, n_kv: int, ctx: int, hd: int, cache_type: str) -> tuple[np.ndarray, np.ndarray]:
    """(keys, values) of one sequence as the CPU cache holds them (ops.attend)."""
    keys, _ = cached(rng, (n_kv, ctx, hd), cache_type)
    values, _ = cached(rng, (ctx, n_kv, hd), cache_type)
    return np.stack([blocked(np.ascontiguousarray(k.T)) for k in keys]), values


@pytest.mark.parametrize("serial_terms", [ops.SERIAL_TERMS, 0], ids=["one-thread", "threads"])
@pytest.mark.parametrize("cache_type", ["f16", "q8_0"])
def test_rows_of_several_caches_in_one_call_are_each_alone(cache_type, serial_terms, monkeypatch):
    """A shared pass's rows attend in one call, each to its own sequence's cache, on one thread or several:
    each row's output is the bits of its sequence's rows attending alone."""
    monkeypatch.setattr(ops, "SERIAL_TERMS", serial_terms)
    rng = np.random.default_rng(5)
    n_kv, group, hd, ctx = 2, 3, 32, 160
    caches = [random_cache(rng, n_kv, ctx, hd, cache_type) for _ in range(3)]
    positions = np.array([70, 5, 6, 7, 150, 151])  # a decode row, a chunk, two drafts
    cache_of_row = np.array([2, 0, 0, 0, 1, 1])
    q = halves(rng, (len(positions), n_kv * group, hd))
    firsts, lasts = visible_spans(positions, 0, True, int(positions.max()))
    shared = ops.attend(q, *caches[0], ops.cache_addresses(caches), cache_of_row, firsts, lasts, 0.125)
    for c, cache in enumerate(caches):
        rows = cache_of_row == c
        assert np.array_equal(shared[rows], attend_alone(q[rows], cache, firsts[rows], lasts[rows], 0.125))
