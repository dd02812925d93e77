"""How the reference runs each kind of block: the residual branch's output for the new rows."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from kinetic.contracts.blocks import Attention, GatedFeedForward, RmsNorm, ShortConv, Weight
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
    bu = b * u
    weights = w(block.conv).astype(np.float64)  # [n_embd, width]
    width = weights.shape[1]
    convolved = np.empty_like(bu)
    for seq, rows in groups:
        kept = seq.rows(block_index)
        kept.append(bu[rows])
        padded = np.concatenate([np.zeros((width - 1, bu.shape[1]), np.float32), kept.rows])
        first = len(kept.rows) - len(rows)  # the group's first row's index among the kept ones
        for i, row in enumerate(rows):
            window = padded[first + i : first + i + width].astype(np.float64)  # [width, n_embd]
            convolved[row] = np.einsum("wc,cw->c", window, weights)
    return ops.linear(c * convolved, w(block.out_proj))


def _norm(w: Weights, norm: Optional[RmsNorm], x: np.ndarray) -> np.ndarray:
    """norm over x's last axis in pieces of the norm's width (a head, or all heads together); x itself without one."""
    if norm is None:
        return x
    width = len(w(norm.weight))
    return ops.rms_norm(x.reshape(-1, width), w(norm.weight), norm.eps).reshape(x.shape)
