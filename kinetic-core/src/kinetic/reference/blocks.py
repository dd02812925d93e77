"""How the reference runs each kind of block: the residual branch's output for the new rows."""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, LayerNorm, Mamba2, Norm,
                                      ShortConv, Weight)
from kinetic.experts import route, swiglu_oai
from kinetic.reference import ops
from kinetic.reference.sequence import Sequence

Weights = Callable[[Optional[Weight]], Optional[np.ndarray]]  # a weight -> its float32 values (None -> None)


def attention(w: Weights, block: Attention, x: np.ndarray, positions: np.ndarray,
              groups: list[tuple[Sequence, np.ndarray]], block_index: int) -> np.ndarray:
    """Every row attends to its own sequence: the cached tokens and this pass's rows of that sequence."""
    # x: [n, n_embd] float32; positions: [n]; groups: each sequence with the indices of its rows, in order
    n = len(x)
    h = norm(w, block.norm, x)
    q = ops.linear(h, w(block.q), w(block.q_bias))
    if block.output_gate:  # each head's queries, then its gate
        q, gate = (part.reshape(n, -1) for part in np.split(q.reshape(n, block.n_head, 2, -1), 2, axis=2))
    k = ops.linear(h, w(block.k), w(block.k_bias))
    v = ops.linear(h, w(block.v), w(block.v_bias)).reshape(n, block.n_head_kv, block.head_dim)
    if not block.norms_after_rope:
        q, k = norm(w, block.q_norm, q), norm(w, block.k_norm, k)
    freq_factors = w(block.rope.freq_factors)
    q = ops.rope(q.reshape(n, block.n_head, block.head_dim), positions, block.rope, freq_factors)
    k = ops.rope(k.reshape(n, block.n_head_kv, block.head_dim), positions, block.rope, freq_factors)
    if block.norms_after_rope:
        q, k = norm(w, block.q_norm, q), norm(w, block.k_norm, k)
    out = np.empty((n, block.n_head * block.head_dim), dtype=np.float32)
    for seq, rows in groups:
        cache = seq.cache(block_index)
        cache.append(k[rows], v[rows])
        out[rows] = ops.attend(q[rows], cache.keys, cache.values, positions[rows], seq.positions, block.scale,
                               block.sliding_window, w(block.sinks), block.causal)
    if block.output_gate:
        out = out * ops.sigmoid(gate)
    return norm(w, block.post_norm, ops.linear(out, w(block.o), w(block.o_bias)))


def feed_forward(w: Weights, block: GatedFeedForward, x: np.ndarray) -> np.ndarray:
    # x: [n, n_embd] float32
    h = norm(w, block.norm, x)
    activation, up = ops.ACTIVATIONS[block.activation], ops.linear(h, w(block.up), w(block.up_bias))
    gated = activation(up) if block.gate is None else activation(ops.linear(h, w(block.gate))) * up
    return norm(w, block.post_norm, ops.linear(gated, w(block.down), w(block.down_bias)))


def experts(w: Weights, block: Experts, x: np.ndarray) -> np.ndarray:
    """Each row's picked experts' feed-forwards, weighted and summed in rank order, and the shared expert's."""
    # x: [n, n_embd] float32
    h = norm(w, block.norm, x)
    chosen, weights = route(block, ops.linear(h, w(block.router), w(block.router_bias)), w(block.selection_bias))
    gate, up, down = w(block.gate), w(block.up), w(block.down)  # [n_expert, ...] each
    biases = [w(b) if b is not None else np.zeros(m.shape[:2], np.float32)
              for b, m in ((block.gate_bias, gate), (block.up_bias, up), (block.down_bias, down))]
    out = np.zeros_like(h)
    for rank in range(block.n_used):
        picked = chosen[:, rank]
        g, u = (_each(m[picked], h) + b[picked] for m, b in ((gate, biases[0]), (up, biases[1])))
        gated = swiglu_oai(g, u) if block.activation == "swiglu_oai" else ops.ACTIVATIONS[block.activation](g) * u
        out = out + weights[:, rank : rank + 1] * (_each(down[picked], gated) + biases[2][picked])
    if block.shared is not None:
        shared = feed_forward(w, block.shared, h)
        if block.shared_gate is not None:
            shared = shared * ops.sigmoid(h @ w(block.shared_gate))[:, None]
        out = out + shared
    return out


def _each(matrices: np.ndarray, x: np.ndarray) -> np.ndarray:
    # matrices: [n, rows, cols], row t's own; x: [n, cols] -> [n, rows]
    return np.einsum("nrc,nc->nr", matrices, x)


def short_conv(w: Weights, block: ShortConv, x: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
               block_index: int) -> np.ndarray:
    """Each row convolves its own sequence's kept b * u rows, its own the last."""
    # x: [n, n_embd] float32; groups: each sequence with the indices of its rows, in order
    b, c, u = np.split(ops.linear(norm(w, block.norm, x), w(block.in_proj)), 3, axis=1)
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
    zvdt = ops.linear(norm(w, block.norm, x), w(block.in_proj))
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
    t = ops.softplus(dt + w(block.dt_bias))
    decay = np.exp(t * w(block.a)[:, 0])
    state = state * decay[:, None, None] + (t[:, None] * u)[:, :, None] * b[:, None, :]
    y = np.einsum("hds,hs->hd", state, c) + w(block.d)[:, 0:1] * u
    return state, y.reshape(-1).astype(np.float32)


def gated_delta_net(w: Weights, block: GatedDeltaNet, x: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
                    block_index: int) -> np.ndarray:
    """Each row convolves its own sequence's kept qkv rows, then steps that sequence's states (float64)."""
    # x: [n, n_embd] float32; groups: each sequence with the indices of its rows, in order
    n, hd = len(x), block.head_dim
    h = norm(w, block.norm, x)
    qkv = ops.silu(_convolve(w, block.conv, ops.linear(h, w(block.qkv_proj)), groups, block_index))
    keys = block.n_k_head * hd
    q = ops.l2_norm(qkv[:, :keys].reshape(n, block.n_k_head, hd), block.l2_eps)
    k = ops.l2_norm(qkv[:, keys : 2 * keys].reshape(n, block.n_k_head, hd), block.l2_eps)
    v = qkv[:, 2 * keys :].reshape(n, block.n_v_head, hd)
    tiles = block.n_v_head // block.n_k_head  # v head h reads q and k head h mod n_k_head
    q, k = np.tile(q, (1, tiles, 1)), np.tile(k, (1, tiles, 1))
    beta = ops.sigmoid(ops.linear(h, w(block.beta_proj))).astype(np.float64)
    decay = np.exp(ops.softplus(ops.linear(h, w(block.alpha_proj)) + w(block.dt_bias)) * w(block.a))
    o = np.empty((n, block.n_v_head, hd), np.float32)
    for seq, rows in groups:
        states = seq.states(block_index)
        for row in rows:
            state = states[-1] if states else np.zeros((block.n_v_head, hd, hd))
            state = state * decay[row][:, None, None]
            kr = k[row].astype(np.float64)
            d = beta[row][:, None] * (v[row] - np.einsum("hvk,hk->hv", state, kr))
            state = state + d[:, :, None] * kr[:, None, :]
            o[row] = np.einsum("hvk,hk->hv", state, q[row].astype(np.float64)) / np.sqrt(hd)
            states.append(state)
    normed = ops.rms_norm(o, w(block.out_norm.weight), block.out_norm.eps)
    z = ops.linear(h, w(block.gate_proj)).reshape(n, block.n_v_head, hd)
    return ops.linear((normed * ops.silu(z)).reshape(n, -1), w(block.out_proj))


def norm(w: Weights, given: Optional[Norm], x: np.ndarray) -> np.ndarray:
    """norm over x's last axis in pieces of the norm's width (a head, or all heads together); x itself without one."""
    if given is None:
        return x
    width = len(w(given.weight))
    pieces = x.reshape(-1, width)
    if isinstance(given, LayerNorm):
        return ops.layer_norm(pieces, w(given.weight), w(given.bias), given.eps).reshape(x.shape)
    return ops.rms_norm(pieces, w(given.weight), given.eps).reshape(x.shape)
