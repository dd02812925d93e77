"""The CPU device's non-matrix kernels: norms, rotary embeddings, attention, gates.

Each output element is computed by one fixed sequence of operations whatever the batch size, thread
count or row position (DESIGN.md, Exactness 1): numba without fastmath keeps every sum in loop order.
Norms and rotations run on one thread: they are cheap, and starting threads costs more; gates and attention
split over threads once they are large enough.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from kinetic_cpu.kernels.intrinsics import fetch_add

_JIT = dict(cache=True, nogil=True)


def to_half(x: np.ndarray) -> np.ndarray:
    """x rounded to float16 (to nearest, ties to even), kept as float32."""
    return x.astype(np.float16).astype(np.float32)


@numba.njit(**_JIT)
def rms_norm(x, weight, eps):  # x: [n, d] float32, weight: [d] float32 -> [n, d] float32
    """x / sqrt(mean(x^2) + eps) * weight, each row on its own, the sum of squares in float64."""
    n, d = x.shape
    out = np.empty_like(x)
    for i in range(n):
        total = 0.0
        for j in range(d):
            total += np.float64(x[i, j]) * np.float64(x[i, j])
        scale = np.float32(1.0 / math.sqrt(total / d + eps))
        for j in range(d):
            out[i, j] = x[i, j] * scale * weight[j]
    return out


@numba.njit(**_JIT)
def rope_angles(positions, n_dims, base, scale, factors):  # positions: [n] int64 -> ([n, n_dims/2] float64,) * 2
    """cos and sin of position * scale * base^(-2k/n_dims) / factor_k (Su et al., 2021), for every row and k."""
    half = n_dims // 2
    powers = np.empty(half)
    for k in range(half):
        powers[k] = base ** (-2.0 * k / n_dims)
    cos, sin = np.empty((positions.size, half)), np.empty((positions.size, half))
    for i in range(positions.size):
        for k in range(half):
            theta = positions[i] * scale * powers[k] / factors[k]
            cos[i, k], sin[i, k] = math.cos(theta), math.sin(theta)
    return cos, sin


@numba.njit(**_JIT)
def rope(x, cos, sin, neox):  # x: [n, heads, head_dim] float32, in place; cos, sin: [n, n_dims/2] float64
    """Rotate pairs of the first n_dims of each head by rope_angles: adjacent pairs (2k, 2k+1), or with neox
    the pairs (k, k + n_dims/2)."""
    n, heads, _ = x.shape
    half = cos.shape[1]
    for i in range(n):
        for k in range(half):
            c, s = cos[i, k], sin[i, k]
            a, b = (k, k + half) if neox else (2 * k, 2 * k + 1)
            for h in range(heads):
                x0, x1 = np.float64(x[i, h, a]), np.float64(x[i, h, b])
                x[i, h, a] = np.float32(x0 * c - x1 * s)
                x[i, h, b] = np.float32(x0 * s + x1 * c)


SERIAL_SCORES = 1 << 15  # below this many scores one thread beats waking the others
SERIAL_GATES = 1 << 14  # below this many gate outputs likewise (a one-token pass stays on one thread)
GATE_CHUNK = 1024  # gate outputs per parallel job


def attend(q, k_cache, v_cache, positions, scale, window):
    """Causal grouped-query attention of each row over cache positions [max(0, p - window + 1), p].

    q: [n, n_head, hd], k_cache: [n_head_kv, hd, ctx] (keys transposed, so a score's terms for consecutive
    positions lie side by side and vectorize), v_cache: [ctx, n_head_kv, hd], all float32; positions: [n]
    int64; window: 0 for none. -> [n, n_head * hd] float32. Each score sums over the head dimension in
    order, softmax and the weighted sum go in position order, all in float64, whatever the thread count.
    """
    out = np.empty((q.shape[0], q.shape[1] * q.shape[2]), dtype=np.float32)
    if q.shape[0] * q.shape[1] * (int(positions[-1]) + 1) < SERIAL_SCORES:
        _attend_serial(q, k_cache, v_cache, positions, scale, window, out)
    else:
        _attend_parallel(q, k_cache, v_cache, positions, scale, window, out, numba.get_num_threads())
    return out


@numba.njit(**_JIT)
def _attend_head(q, k_cache, v_cache, positions, scale, window, job, out):
    """Row i = job // n_head, head h = job % n_head of attend's output."""
    n_head, hd = q.shape[1], q.shape[2]
    i, h = job // n_head, job % n_head
    kv = h // (n_head // k_cache.shape[0])
    last = positions[i]
    first = max(0, last - window + 1) if window > 0 else 0
    scores = np.zeros(last - first + 1, dtype=np.float64)
    for j in range(hd):  # every score gains its term j: each still sums j = 0, 1, ... in order
        qj = np.float64(q[i, h, j])
        keys = k_cache[kv, j]
        for t in range(scores.size):
            scores[t] += qj * np.float64(keys[first + t])
    for t in range(scores.size):
        scores[t] *= scale
    peak = scores.max()
    total = 0.0
    for t in range(scores.size):
        scores[t] = math.exp(scores[t] - peak)
        total += scores[t]
    acc = np.zeros(hd, dtype=np.float64)
    for t in range(scores.size):  # each acc[j] sums over t in order
        for j in range(hd):
            acc[j] += scores[t] * np.float64(v_cache[first + t, kv, j])
    for j in range(hd):
        out[i, h * hd + j] = np.float32(acc[j] / total)


@numba.njit(**_JIT)
def _attend_serial(q, k_cache, v_cache, positions, scale, window, out):
    for job in range(q.shape[0] * q.shape[1]):
        _attend_head(q, k_cache, v_cache, positions, scale, window, job, out)


@numba.njit(parallel=True, **_JIT)
def _attend_parallel(q, k_cache, v_cache, positions, scale, window, out, threads):
    """Heads handed out one at a time from a shared counter, so a slow thread takes fewer."""
    counter = np.zeros(1, np.int64)
    n_jobs = q.shape[0] * q.shape[1]
    for _ in prange(max(1, min(threads, n_jobs))):
        job = fetch_add(counter)
        while job < n_jobs:
            _attend_head(q, k_cache, v_cache, positions, scale, window, job, out)
            job = fetch_add(counter)


def gate(g, u, gelu):  # g, u: [n, ff] float32 -> act(g) * u
    """SiLU (Elfwing et al., 2017) or tanh-approximated GELU (Hendrycks and Gimpel, 2016) of g, times u."""
    out = np.empty_like(g)
    if g.size < SERIAL_GATES:
        _gate_serial(g, u, gelu, out)
    else:
        _gate_parallel(g, u, gelu, out, numba.get_num_threads())
    return out


@numba.njit(**_JIT)
def _gate_chunk(g, u, gelu, job, out):
    """Outputs GATE_CHUNK * job .. of the flattened [n, ff] out."""
    chunks = (g.shape[1] + GATE_CHUNK - 1) // GATE_CHUNK
    i, start = job // chunks, job % chunks * GATE_CHUNK
    for j in range(start, min(g.shape[1], start + GATE_CHUNK)):
        x = np.float64(g[i, j])
        if gelu:
            a = 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
        else:
            a = x / (1.0 + math.exp(-x))
        out[i, j] = np.float32(a * u[i, j])


@numba.njit(**_JIT)
def _gate_serial(g, u, gelu, out):
    for job in range(g.shape[0] * ((g.shape[1] + GATE_CHUNK - 1) // GATE_CHUNK)):
        _gate_chunk(g, u, gelu, job, out)


@numba.njit(parallel=True, **_JIT)
def _gate_parallel(g, u, gelu, out, threads):
    """Chunks handed out from a shared counter, as _attend_parallel's heads."""
    counter = np.zeros(1, np.int64)
    n_jobs = g.shape[0] * ((g.shape[1] + GATE_CHUNK - 1) // GATE_CHUNK)
    for _ in prange(max(1, min(threads, n_jobs))):
        job = fetch_add(counter)
        while job < n_jobs:
            _gate_chunk(g, u, gelu, job, out)
            job = fetch_add(counter)
