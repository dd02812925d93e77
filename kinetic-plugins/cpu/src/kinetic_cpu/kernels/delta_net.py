"""Qwen3.5's gated delta rule (contracts.blocks.GatedDeltaNet) for one sequence's rows, in order, its value heads
shared among numba's threads (each head's sums stay on one thread, in one order)."""

from __future__ import annotations

import math

import numba
import numpy as np

from kinetic_cpu.kernels.ssm_scan import SOFTPLUS_CUT, dot


@numba.njit(cache=True, nogil=True, parallel=True)
def scan(q, k, v, beta, alpha, dt_bias, a, state_in, state_out):
    """Rows in order from state_in, into state_out: per value head h, reading q and k head h mod n_k_head,
    decay = exp(softplus(alpha_h + dt_bias_h) a_h), b = sigmoid(beta_h); each state row j (a value dimension)
    S_j = S_j decay + b (v_j - decay S_j.k) k, then o_j = S_j.q / sqrt(head_dim). Each state value and o in
    float64, rounded to float32 once."""
    # q, k: [n, n_k_head, head_dim] float32 (l2-normed); v: [n, n_head, head_dim] float32; beta, alpha: [n, n_head]
    # float32 (before their sigmoid and softplus); dt_bias, a: [n_head] float32;
    # state_in, state_out: [n_head, head_dim, head_dim] float32 -> o [n, n_head, head_dim] float32
    n_head, head_dim = state_in.shape[0], state_in.shape[1]
    n_k_head = q.shape[1]
    scale = 1.0 / math.sqrt(head_dim)
    o = np.empty((q.shape[0], n_head, head_dim), np.float32)
    for h in numba.prange(n_head):
        kh = h % n_k_head
        for i in range(q.shape[0]):
            source = state_in if i == 0 else state_out
            t = np.float64(alpha[i, h] + dt_bias[h])
            if t <= SOFTPLUS_CUT:
                t = math.log1p(math.exp(t))
            decay = math.exp(t * np.float64(a[h]))
            b = 1.0 / (1.0 + math.exp(-np.float64(beta[i, h])))
            keys, queries = k[i, kh], q[i, kh]
            for j in range(head_dim):
                before, after = source[h, j], state_out[h, j]  # the same row after the first
                delta = b * (np.float64(v[i, h, j]) - decay * dot(before, keys))
                for s in range(head_dim):
                    after[s] = np.float32(np.float64(before[s]) * decay + delta * np.float64(keys[s]))
                o[i, h, j] = np.float32(dot(after, queries) * scale)
    return o
