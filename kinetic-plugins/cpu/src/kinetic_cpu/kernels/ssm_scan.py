"""Mamba-2's selective scan (contracts.blocks.Mamba2) for one sequence's rows, in order, its heads shared among
numba's threads (each head's sums stay on one thread, in one order)."""

from __future__ import annotations

import math

import numba
import numpy as np

SOFTPLUS_CUT = 20.0  # softplus(t) is t above this, as ggml's ggml_compute_softplus_f32 takes it


@numba.njit(cache=True, nogil=True, parallel=True)
def scan(v, dt, dt_bias, a, d, state_in, state_out, n_group):
    """Rows in order from state_in, into state_out: per head h of group g, t = softplus(dt_h + dt_bias_h),
    S_h = S_h exp(t a_h) + t u_h B_g^T, y_h = S_h C_g + d_h u_h. Each state value and y in float64, rounded to
    float32 once."""
    # v: [n, channels] float32 (u [d_inner], B, C [n_group * d_state]); dt: [n, n_head] float32;
    # dt_bias, a, d: [n_head] float32; state_in, state_out: [n_head, head_dim, d_state] float32 -> y [n, d_inner]
    n_head, head_dim, d_state = state_in.shape
    d_inner = n_head * head_dim
    per_group = n_head // n_group
    y = np.empty((v.shape[0], d_inner), np.float32)
    for h in numba.prange(n_head):
        g = h // per_group
        b_at, c_at = d_inner + g * d_state, d_inner + (n_group + g) * d_state
        for i in range(v.shape[0]):
            source = state_in if i == 0 else state_out
            t = np.float64(dt[i, h]) + np.float64(dt_bias[h])
            if t <= SOFTPLUS_CUT:
                t = math.log1p(math.exp(t))
            decay = math.exp(t * np.float64(a[h]))
            b, c = v[i, b_at : b_at + d_state], v[i, c_at : c_at + d_state]
            for p in range(head_dim):
                u = np.float64(v[i, h * head_dim + p])
                tu = t * u
                before, after = source[h, p], state_out[h, p]
                for s in range(d_state):
                    after[s] = np.float32(np.float64(before[s]) * decay + tu * np.float64(b[s]))
                y[i, h * head_dim + p] = dot(after, c) + np.float64(d[h]) * u
    return y


@numba.njit(cache=True, nogil=True, inline="always")
def dot(x, c):
    """The float64 sum of x[s] c[s] (float32 each) in 4 interleaved partial sums, then those pairwise, in that
    fixed order: the partial sums are independent, so the loop runs on vector registers."""
    s0 = s1 = s2 = s3 = 0.0
    whole = len(x) // 4 * 4
    for s in range(0, whole, 4):
        s0 += np.float64(x[s]) * np.float64(c[s])
        s1 += np.float64(x[s + 1]) * np.float64(c[s + 1])
        s2 += np.float64(x[s + 2]) * np.float64(c[s + 2])
        s3 += np.float64(x[s + 3]) * np.float64(c[s + 3])
    for s in range(whole, len(x)):
        s0 += np.float64(x[s]) * np.float64(c[s])
    return (s0 + s1) + (s2 + s3)
