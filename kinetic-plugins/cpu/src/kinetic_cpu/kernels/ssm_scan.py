"""Mamba-2's selective scan (contracts.blocks.Mamba2) for one sequence's rows, in order, its heads shared among
numba's threads (each head's sums stay on one thread, in one order)."""

from __future__ import annotations

import math

import numba
import numpy as np

SOFTPLUS_CUT = 20.0  # softplus(t) is t above this, as ggml's ggml_compute_softplus_f32 takes it


@numba.njit(cache=True, nogil=True, inline="always")
def softplus(t):
    return t if t > SOFTPLUS_CUT else math.log1p(math.exp(t))


@numba.njit(cache=True, nogil=True, inline="always")
def decay_add(row, decay, xs, x, sums, weight):
    """A state row's step, element by element in float32: row = row decay + xs x, then sums += row weight."""
    # row, xs, sums: [width] float32, row updated in place; decay, x, weight: float32
    for p in range(len(row)):
        row[p] = row[p] * decay + xs[p] * x
        sums[p] += row[p] * weight


@numba.njit(cache=True, nogil=True, parallel=True)
def scan(v, dt, dt_bias, a, d, state_in, state_out, n_group):
    """Rows in order from state_in, into state_out: per head h of group g, t = softplus(dt_h + dt_bias_h),
    S_h = S_h exp(t a_h) + B_g (t u_h)^T, y_h = S_h^T C_g + d_h u_h. The scalars in float64, rounded to float32;
    the state's arithmetic in float32, as ggml's, y's sums over d_state in order. The state's columns are head
    dimensions, so each step runs along contiguous rows in vector registers (kinetic.recurrent.state_shape)."""
    # v: [n, channels] float32 (u [d_inner], B, C [n_group * d_state]); dt: [n, n_head] float32;
    # dt_bias, a, d: [n_head] float32; state_in, state_out: [n_head, d_state, head_dim] float32 -> y [n, d_inner]
    n_head, d_state, head_dim = state_in.shape
    y = np.empty((v.shape[0], n_head * head_dim), np.float32)
    separate = state_in.ctypes.data != state_out.ctypes.data  # else the states are updated where they are
    for h in numba.prange(n_head):
        scan_head(v, dt, dt_bias, a, d, state_in[h], state_out[h], h, n_group, y, separate)
    return y


@numba.njit(cache=True, nogil=True, inline="always")
def scan_head(v, dt, dt_bias, a, d, head_in, head_out, h, n_group, y, separate):
    """scan's head h: v's rows in order from head_in into head_out ([d_state, head_dim] each; the same memory
    unless separate), its outputs into y[:, h * head_dim:][:head_dim]."""
    d_state, head_dim = head_out.shape
    n_head, d_inner = y.shape[1] // head_dim, y.shape[1]
    g = h // (n_head // n_group)
    b_at, c_at, u_at = d_inner + g * d_state, d_inner + (n_group + g) * d_state, h * head_dim
    tu, sums = np.empty(head_dim, np.float32), np.empty(head_dim, np.float32)
    # head_out is updated in place, each row copied in at the first step, while it is in cache: rows that alias
    # no other keep to vector registers
    for i in range(v.shape[0]):
        t = softplus(np.float64(dt[i, h]) + np.float64(dt_bias[h]))
        decay = np.float32(math.exp(t * np.float64(a[h])))
        for p in range(head_dim):
            tu[p] = np.float32(t * np.float64(v[i, u_at + p]))
            sums[p] = 0.0
        for s in range(d_state):
            b, c = v[i, b_at + s], v[i, c_at + s]
            row = head_out[s]
            if i == 0 and separate:
                row[:] = head_in[s]
            decay_add(row, decay, tu, b, sums, c)
        for p in range(head_dim):
            y[i, u_at + p] = sums[p] + np.float32(np.float64(d[h]) * np.float64(v[i, u_at + p]))
