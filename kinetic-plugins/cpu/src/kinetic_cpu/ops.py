"""The CPU device's non-matrix kernels: norms, rotary embeddings, attention, gates.

Each output element is computed by one fixed sequence of operations whatever the batch size, thread
count or row position (DESIGN.md, Exactness 1): numba without fastmath keeps every sum in loop order.
The elementwise kernels run on one thread: they are cheap, and starting threads costs more.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

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
def rope(x, positions, n_dims, base, scale, factors, neox):  # x: [n, heads, head_dim] float32, in place
    """Rotate pairs of the first n_dims of each head by position * base^(-2k/n_dims) / factor_k (Su et al., 2021).
    Adjacent pairs (2k, 2k+1), or with neox the pairs (k, k + n_dims/2)."""
    n, heads, _ = x.shape
    half = n_dims // 2
    for i in range(n):
        for k in range(half):
            theta = positions[i] * scale * base ** (-2.0 * k / n_dims) / factors[k]
            c, s = math.cos(theta), math.sin(theta)
            a, b = (k, k + half) if neox else (2 * k, 2 * k + 1)
            for h in range(heads):
                x0, x1 = np.float64(x[i, h, a]), np.float64(x[i, h, b])
                x[i, h, a] = np.float32(x0 * c - x1 * s)
                x[i, h, b] = np.float32(x0 * s + x1 * c)


SERIAL_SCORES = 1 << 15  # below this many scores one thread beats waking the others


def attend(q, k_cache, v_cache, positions, scale, window):
    """Causal grouped-query attention of each row over cache positions [max(0, p - window + 1), p].

    q: [n, n_head, hd], k_cache: [n_head_kv, hd, ctx] (keys transposed, so a score's terms for consecutive
    positions lie side by side and vectorize), v_cache: [ctx, n_head_kv, hd], all float32; positions: [n]
    int64; window: 0 for none. -> [n, n_head * hd] float32. Each score sums over the head dimension in
    order, softmax and the weighted sum go in position order, all in float64, whatever the thread count.
    """
    n_scores = q.shape[0] * q.shape[1] * (int(positions[-1]) + 1)
    kernel = _attend_serial if n_scores < SERIAL_SCORES else _attend_parallel
    return kernel(q, k_cache, v_cache, positions, scale, window)


def _attend(q, k_cache, v_cache, positions, scale, window):
    n, n_head, hd = q.shape
    group = n_head // k_cache.shape[0]
    out = np.empty((n, n_head * hd), dtype=np.float32)
    for job in prange(n * n_head):
        i, h = job // n_head, job % n_head
        kv = h // group
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
    return out


_attend_parallel = numba.njit(parallel=True, **_JIT)(_attend)
_attend_serial = numba.njit(**_JIT)(_attend)


@numba.njit(**_JIT)
def gate(g, u, gelu):  # g, u: [n, ff] float32 -> act(g) * u
    """SiLU (Elfwing et al., 2017) or tanh-approximated GELU (Hendrycks and Gimpel, 2016) of g, times u."""
    n, ff = g.shape
    out = np.empty_like(g)
    for i in range(n):
        for j in range(ff):
            x = np.float64(g[i, j])
            if gelu:
                a = 0.5 * x * (1.0 + math.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))
            else:
                a = x / (1.0 + math.exp(-x))
            out[i, j] = np.float32(a * u[i, j])
    return out
