"""Qwen3.5's gated delta rule (contracts.blocks.GatedDeltaNet) for one sequence's rows, in order, its value heads
shared among numba's threads (each head's sums stay on one thread, in one order)."""

from __future__ import annotations

import math

import numba
import numpy as np

from kinetic_cpu.kernels.ssm_scan import decay_add, softplus


@numba.njit(cache=True, nogil=True, parallel=True)
def scan(q, k, v, beta, alpha, dt_bias, a, state_in, state_out):
    """Rows in order from state_in, into state_out: per value head h, reading q and k head h mod n_k_head,
    decay = exp(softplus(alpha_h + dt_bias_h) a_h), b = sigmoid(beta_h); with S_h [key dim, value dim],
    delta = b (v - decay S_h^T k), S_h = S_h decay + k delta^T, then o = S_h^T q / sqrt(head_dim). The scalars
    in float64, rounded to float32; the state's arithmetic in float32, as ggml's, the sums over the key dimension
    in order. The state's columns are value dimensions, so each step runs along contiguous rows in vector
    registers."""
    # q, k: [n, n_k_head, head_dim] float32 (l2-normed); v: [n, n_head, head_dim] float32; beta, alpha: [n, n_head]
    # float32 (before their sigmoid and softplus); dt_bias, a: [n_head] float32;
    # state_in, state_out: [n_head, head_dim (k), head_dim (v)] float32 -> o [n, n_head, head_dim] float32
    n_head, head_dim = state_in.shape[0], state_in.shape[1]
    o = np.empty((q.shape[0], n_head, head_dim), np.float32)
    separate = state_in.ctypes.data != state_out.ctypes.data  # else the states are updated where they are
    for h in numba.prange(n_head):
        scan_head(q, k, v, beta, alpha, dt_bias, a, state_in[h], state_out[h], h, o, separate)
    return o


@numba.njit(cache=True, nogil=True, inline="always")
def scan_head(q, k, v, beta, alpha, dt_bias, a, head_in, head_out, h, o, separate):
    """scan's value head h: the rows in order from head_in into head_out ([head_dim (k), head_dim (v)] each; the
    same memory unless separate), its outputs into o[:, h]."""
    head_dim, kh = head_out.shape[0], h % q.shape[1]
    scale = np.float32(1.0 / math.sqrt(head_dim))
    delta, sums = np.empty(head_dim, np.float32), np.empty(head_dim, np.float32)
    # head_out is updated in place, each row copied in at the first step, while it is in cache: rows that alias
    # no other keep to vector registers
    for i in range(q.shape[0]):
        decay = np.float32(math.exp(softplus(np.float64(alpha[i, h] + dt_bias[h])) * np.float64(a[h])))
        b = np.float32(1.0 / (1.0 + math.exp(-np.float64(beta[i, h]))))
        keys, queries = k[i, kh], q[i, kh]
        sums[:] = 0.0
        for s in range(head_dim):
            key, row = keys[s], head_out[s]
            if i == 0 and separate:
                row[:] = head_in[s]
            for j in range(head_dim):
                sums[j] += row[j] * key
        for j in range(head_dim):
            delta[j] = b * (v[i, h, j] - decay * sums[j])
            sums[j] = 0.0
        for s in range(head_dim):
            key, query, row = keys[s], queries[s], head_out[s]
            decay_add(row, decay, delta, key, sums, query)
        for j in range(head_dim):
            o[i, h, j] = sums[j] * scale
