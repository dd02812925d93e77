"""Mamba-2's selective scan (contracts.blocks.Mamba2) for one sequence's rows, in order."""

from __future__ import annotations

import math

import numba
import numpy as np

SOFTPLUS_CUT = 20.0  # softplus(t) is t above this, as ggml's ggml_compute_softplus_f32 takes it


@numba.njit(cache=True, nogil=True)
def scan(v, dt, dt_bias, a, d, state, n_group):
    """Rows in order: per head h of group g, t = softplus(dt_h + dt_bias_h), S_h = S_h exp(t a_h) + t u_h B_g^T
    (state, in place), y_h = S_h C_g + d_h u_h. Each state value and y in float64, rounded to float32 once."""
    # v: [n, channels] float32 (u [d_inner], B, C [n_group * d_state]); dt: [n, n_head] float32;
    # dt_bias, a, d: [n_head] float32; state: [n_head, head_dim, d_state] float32 -> y [n, d_inner] float32
    n_head, head_dim, d_state = state.shape
    d_inner = n_head * head_dim
    per_group = n_head // n_group
    y = np.empty((v.shape[0], d_inner), np.float32)
    for i in range(v.shape[0]):
        for h in range(n_head):
            g = h // per_group
            t = np.float64(dt[i, h]) + np.float64(dt_bias[h])
            if t <= SOFTPLUS_CUT:
                t = math.log1p(math.exp(t))
            decay = math.exp(t * np.float64(a[h]))
            b_at, c_at = d_inner + g * d_state, d_inner + (n_group + g) * d_state
            for p in range(head_dim):
                u = np.float64(v[i, h * head_dim + p])
                total = 0.0
                for s in range(d_state):
                    kept = np.float32(np.float64(state[h, p, s]) * decay + t * u * np.float64(v[i, b_at + s]))
                    state[h, p, s] = kept
                    total += np.float64(kept) * np.float64(v[i, c_at + s])
                y[i, h * head_dim + p] = total + np.float64(d[h]) * u
    return y
