"""How the reference runs each kind of block: the residual branch's output for the new rows."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from kinetic.contracts.blocks import Attention, GatedFeedForward, Mamba2, RmsNorm, ShortConv, Weight
from kinetic.reference import ops
from kinetic.reference.sequence import Sequence

Weights = Callable[[Optional[Weight]], Optional[np.ndarray]]  # a weight -> its float32 values (None -> None)


def attention(w: Weights, block: Attention, x: np.ndarray, positions: np.ndarray,
              groups: list[tuple[Sequence, np.ndarray]], block_index: int) -> np.ndarray:
    """Every row attends to its own sequence: the cached tokens and this pass's rows of that sequence."""
    # x: [n, n_embd] float32; positions: [n]; groups: each sequence with the indices of its rows, in order
    n = len(x)
    h = _norm(w, block.norm, x)
    q = ops.linear(h, w(block.q), w(block.q_bias))
    k = ops.linear(h, w(block.k), w(block.k_bias))
    v = ops.linear(h, w(block.v), w(block.v_bias)).reshape(n, block.n_head_kv, block.head_dim)
    if not block.norms_after_rope:
        q, k = _norm(w, block.q_norm, q), _norm(w, block.k_norm, k)
    freq_factors = w(block.rope.freq_factors)
    q = ops.rope(q.reshape(n, block.n_head, block.head_dim), positions, block.rope, freq_factors)
    k = ops.rope(k.reshape(n, block.n_head_kv, block.head_dim), positions, block.rope, freq_factors)
    if block.norms_after_rope:
        q, k = _norm(w, block.q_norm, q), _norm(w, block.k_norm, k)
    out = np.empty((n, block.n_head * block.head_dim), dtype=np.float32)
    for seq, rows in groups:
        cache = seq.cache(block_index)
        cache.append(k[rows], v[rows])
        out[rows] = ops.attend(q[rows], cache.keys, cache.values, positions[rows], seq.positions, block.scale,
                               block.sliding_window)
    return _norm(w, block.post_norm, ops.linear(out, w(block.o)))


def feed_forward(w: Weights, block: GatedFeedForward, x: np.ndarray) -> np.ndarray:
    # x: [n, n_embd] float32
    h = _norm(w, block.norm, x)
    gated = ops.ACTIVATIONS[block.activation](ops.linear(h, w(block.gate))) * ops.linear(h, w(block.up))
    return _norm(w, block.post_norm, ops.linear(gated, w(block.down)))


def short_conv(w: Weights, block: ShortConv, x: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
               block_index: int) -> np.ndarray:
    """Each row convolves its own sequence's kept b * u rows, its own the last."""
    # x: [n, n_embd] float32; groups: each sequence with the indices of its rows, in order
    b, c, u = np.split(ops.linear(_norm(w, block.norm, x), w(block.in_proj)), 3, axis=1)
    return ops.linear(c * _convolve(w, block.conv, b * u, groups, block_index), w(block.out_proj))


def _convolve(w: Weights, conv: Weight, v: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
              block_index: int) -> np.ndarray:
    """Each sequence's rows of v join its kept rows; each is convolved over itself and the width - 1 kept rows
    before it (0 before the first), in float64."""
    # v: [n, channels] float32; conv: [channels, width] -> [n, channels] float32
    weights = w(conv).astype(np.float64)
    width = weights.shape[1]
    convolved = np.empty(v.shape, np.float32)
    for seq, rows in groups:
        kept = seq.rows(block_index)
        kept.append(v[rows])
        padded = np.concatenate([np.zeros((width - 1, v.shape[1]), np.float32), kept.rows])
        first = len(kept.rows) - len(rows)  # the group's first row's index among the kept ones
        for i, row in enumerate(rows):
            window = padded[first + i : first + i + width].astype(np.float64)  # [width, channels]
            convolved[row] = np.einsum("wc,cw->c", window, weights)
    return convolved


def mamba2(w: Weights, block: Mamba2, x: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
           block_index: int) -> np.ndarray:
    """Each row convolves its own sequence's kept v rows, then steps that sequence's state (float64)."""
    # x: [n, n_embd] float32; groups: each sequence with the indices of its rows, in order
    d_inner, channels = block.out_proj.shape[1], block.conv.shape[0]
    zvdt = ops.linear(_norm(w, block.norm, x), w(block.in_proj))
    z, v, dt = zvdt[:, :d_inner], zvdt[:, d_inner : d_inner + channels], zvdt[:, d_inner + channels :]
    convolved = _convolve(w, block.conv, v, groups, block_index)
    if block.conv_bias is not None:
        convolved = convolved + w(block.conv_bias)
    activated = ops.silu(convolved)
    y = np.empty((len(x), d_inner), np.float32)
    for seq, rows in groups:
        states = seq.states(block_index)
        for row in rows:
            state = states[-1] if states else np.zeros((block.n_head, d_inner // block.n_head, block.d_state))
            state, y[row] = _ssm_step(w, block, activated[row], dt[row], state)
            states.append(state)
    gated = y * ops.silu(z)
    if block.out_norm is not None:  # each group normed with its own weights
        weights = w(block.out_norm.weight).reshape(block.n_group, -1)
        grouped = ops.rms_norm(gated.reshape(len(x), block.n_group, -1), weights, block.out_norm.eps)
        gated = grouped.reshape(len(x), -1)
    return ops.linear(gated, w(block.out_proj))


def _ssm_step(w: Weights, block: Mamba2, v: np.ndarray, dt: np.ndarray,
              state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One position of the selective scan: the new state [n_head, head_dim, d_state] float64 and y [d_inner]."""
    # v: [channels] float32 (u, B, C); dt: [n_head] float32
    d_inner = block.out_proj.shape[1]
    grouped = block.d_state * block.n_group
    u = v[:d_inner].astype(np.float64).reshape(block.n_head, -1)
    b = v[d_inner : d_inner + grouped].astype(np.float64).reshape(block.n_group, block.d_state)
    c = v[d_inner + grouped :].astype(np.float64).reshape(block.n_group, block.d_state)
    heads_per_group = block.n_head // block.n_group
    b, c = np.repeat(b, heads_per_group, axis=0), np.repeat(c, heads_per_group, axis=0)  # [n_head, d_state]
    t = dt.astype(np.float64) + w(block.dt_bias)
    t = np.where(t > 20.0, t, np.log1p(np.exp(np.minimum(t, 20.0))))  # softplus, as ggml cuts it
    decay = np.exp(t * w(block.a)[:, 0])
    state = state * decay[:, None, None] + (t[:, None] * u)[:, :, None] * b[:, None, :]
    y = np.einsum("hds,hs->hd", state, c) + w(block.d)[:, 0:1] * u
    return state, y.reshape(-1).astype(np.float32)


def _norm(w: Weights, norm: Optional[RmsNorm], x: np.ndarray) -> np.ndarray:
    """norm over x's last axis in pieces of the norm's width (a head, or all heads together); x itself without one."""
    if norm is None:
        return x
    width = len(w(norm.weight))
    return ops.rms_norm(x.reshape(-1, width), w(norm.weight), norm.eps).reshape(x.shape)
