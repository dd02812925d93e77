"""The blocks on the GPU: their weights uploaded, and the kernels a pass queues for each.

Every function here only queues kernels on the current stream: a pass is the same launches whatever the
data, so the one-token decode step can be captured as a CUDA graph and replayed (CudaRunner._decode).
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, Optional

import cupy
import numpy as np
from cupy.cuda import runtime

from kinetic import rotary
from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, Mamba2, Parallel,
                                      PredictionInput, RmsNorm, Rope, ShortConv, Weight)
from kinetic.contracts.device import cache_rotations
from kinetic_cuda import ops
from kinetic_cuda.expert_cache import ExpertCache
from kinetic_cuda.weights import GpuMatrix, vector
from kinetic_cuda.workspace import Activations, Workspace, mix_widths

Matrices = Callable[[Weight], GpuMatrix]  # a weight -> its one GpuMatrix (tied weights share it)


class GpuNorm:
    def __init__(self, norm: RmsNorm):
        self.weight, self.eps = vector(norm.weight), norm.eps

    def __call__(self, x: cupy.ndarray, n: int, out: cupy.ndarray, rows: Optional[cupy.ndarray] = None,
                 acts: Optional[Activations] = None) -> None:
        ops.rms_norm(x, n, self.weight, self.eps, out, rows, acts)


def _optional(norm: Optional[RmsNorm]) -> Optional[GpuNorm]:
    return GpuNorm(norm) if norm is not None else None


def _bias(weight: Optional[Weight]) -> Optional[cupy.ndarray]:
    return vector(weight) if weight is not None else None


def wants_int8(*matrices: GpuMatrix) -> bool:
    return any(m.quantized for m in matrices)


def products(ws: Workspace, x: cupy.ndarray, n: int, jobs: list[tuple], accumulate: bool = False,
             prepared: bool = False) -> None:
    """out[:n] (+)= x[:n] . m^T for each job (m, out, bias); x's int8 blocks are made here unless prepared (a norm
    or gate made them). Consecutive matrices of one type and width share a launch, three at most."""
    if not prepared and wants_int8(*(m for m, _, _ in jobs)):
        ops.quantize(ws.acts, x, n)
    group: list[tuple] = []
    for job in jobs:
        if group and (len(group) == 3 or (job[0].type, job[0].k) != (group[0][0].type, group[0][0].k)):
            ops.matmul(group, ws.acts, x, n, accumulate)
            group = []
        group.append(job)
    ops.matmul(group, ws.acts, x, n, accumulate)


def residual(ws: Workspace, m: GpuMatrix, x: cupy.ndarray, n: int, post_norm: Optional[GpuNorm], scale: float,
             prepared: bool = False, bias: Optional[cupy.ndarray] = None) -> None:
    """ws.x += post_norm(x . m^T + bias) * scale: straight into ws.x when there is neither."""
    if post_norm is None and scale == 1:
        products(ws, x, n, [(m, ws.x, bias)], accumulate=True, prepared=prepared)
        return
    products(ws, x, n, [(m, ws.y, bias)], prepared=prepared)
    if post_norm is not None:
        post_norm(ws.y, n, ws.y)
    ops.add(ws.x, ws.y, n, scale)


class GpuInput:
    """A prediction block's input (PredictionInput): ws.x = eh_proj([enorm(ws.x), hnorm(vectors)]), the rows'
    vectors (Row.vector) set into `vectors` before a pass, so a decode graph reads them from there."""

    def __init__(self, given: PredictionInput, matrices: Matrices, rows: int):
        self.enorm, self.hnorm, self.eh_proj = GpuNorm(given.enorm), GpuNorm(given.hnorm), matrices(given.eh_proj)
        d = given.enorm.weight.shape[0]
        self.vectors = cupy.zeros((rows, d), cupy.float32)
        self._halves = cupy.zeros((2, rows, d), cupy.float32)  # the normed embeddings, then the normed vectors
        self._joined = cupy.zeros((rows, 2 * d), cupy.float32)

    def run(self, ws: Workspace, n: int) -> None:
        self.enorm(ws.x, n, self._halves[0])
        self.hnorm(self.vectors, n, self._halves[1])
        row = self.vectors.shape[1] * 4
        for half in (0, 1):  # joined[:n, half d : (half + 1) d] = halves[half, :n], a copy a graph can hold
            runtime.memcpy2DAsync(self._joined.data.ptr + half * row, 2 * row, self._halves[half].data.ptr, row, row,
                                  n, runtime.memcpyDeviceToDevice, cupy.cuda.get_current_stream().ptr)
        products(ws, self._joined, n, [(self.eh_proj, ws.x, None)])


def rope_table(rope: Rope, context: int) -> tuple[cupy.ndarray, cupy.ndarray]:
    """cos and sin [context, n_dims / 2] float64 of each position's angles (kinetic.rotary.angle_table)."""
    factors = rope.freq_factors.to_float32() if rope.freq_factors is not None else None
    return tuple(cupy.asarray(table) for table in rotary.angle_table(rope, factors, context))


def _norm_input(ws: Workspace, norm: Optional[GpuNorm], n: int, int8: bool) -> tuple[cupy.ndarray, bool]:
    """The block's input, ws.h = norm(ws.x) or without a norm ws.x itself (a Parallel's mixer: its shared norm,
    ws.shared), and whether its int8 blocks are made."""
    if norm is None:
        return (ws.x if ws.sharing is None else ws.sharing), False
    norm(ws.x, n, ws.h, acts=ws.acts if int8 else None)
    return ws.h, int8


class GpuAttention:
    def __init__(self, a: Attention, matrix: Matrices, tables: Callable[[Rope], tuple], cache_types: tuple[str, str],
                 residual_scale: float):
        self.block, self.residual_scale = a, residual_scale
        self.q8 = tuple(t == "q8_0" for t in cache_types)  # keys', values'
        self.turn_keys, self.turn_values = cache_rotations(a.head_dim, cache_types)
        self.norm, self.q_norm, self.k_norm, self.post_norm = (_optional(x) for x in (a.norm, a.q_norm, a.k_norm,
                                                                                       a.post_norm))
        self.q, self.k, self.v, self.o = (matrix(w) for w in (a.q, a.k, a.v, a.o))
        self.q_bias, self.k_bias, self.v_bias, self.o_bias = (_bias(w) for w in (a.q_bias, a.k_bias, a.v_bias,
                                                                                 a.o_bias))
        self.sinks = _bias(a.sinks)
        self.table = tables(a.rope)
        self.q_width, self.kv_width = a.n_head * a.head_dim, a.n_head_kv * a.head_dim
        self.widths = mix_widths(a)

    def run(self, ws: Workspace, n: int, spans: list[tuple[int, int, cupy.ndarray, cupy.ndarray]]) -> None:
        """ws.x[:n] += this block's output; spans: each sequence's rows in the pass (its first row and row count)
        with its cache's keys and values (kinetic_cuda.cache). The products take every row at once; the cache
        writes and attention run per sequence."""
        a, positions = self.block, ws.inputs[1]
        h, prepared = _norm_input(ws, self.norm, n, wants_int8(self.q, self.k, self.v))
        q, k, v = ws.view(ws.q, self.q_width), ws.view(ws.k, self.kv_width), ws.view(ws.v, self.kv_width)
        if a.output_gate:  # the q projection holds each head's queries, then its gate
            (queries,), (gate,) = (ws.carve(buffer, widths) for buffer, widths in zip((ws.mix_in, ws.mix), self.widths))
            products(ws, h, n, [(self.q, queries, self.q_bias), (self.k, k, self.k_bias), (self.v, v, self.v_bias)],
                     prepared=prepared)
            ops.split_gate(queries, n, a.head_dim, q, gate)
        else:
            products(ws, h, n, [(self.q, q, self.q_bias), (self.k, k, self.k_bias), (self.v, v, self.v_bias)],
                     prepared=prepared)
        if not a.norms_after_rope:
            self._head_norms(q, k, n)
        keep_keys = self.q8[0] or a.norms_after_rope
        for first, rows, keys, values in spans:
            ops.rope_store(q[first:], k[first:], v[first:], positions[first:], rows, a, self.table, keys, values,
                           (keep_keys, self.q8[1]))
        if a.norms_after_rope:
            self._head_norms(q, k, n)
            for first, rows, keys, _ in spans if not self.q8[0] else ():
                ops.store_f16(k[first:], positions[first:], rows, keys)
        if self.turn_keys:
            ops.rotate(q, n, self.turn_keys)
            ops.rotate(k, n, self.turn_keys)
        if self.turn_values:
            ops.rotate(v, n, self.turn_values)
        # the attention kernel quantizes whole heads, unless they must turn back or be gated first
        quantized = self.o.quantized and a.head_dim % 32 == 0 and not self.turn_values and not a.output_gate
        for first, rows, keys, values in spans:
            for x, cache, q8 in ((k, keys, self.q8[0]), (v, values, self.q8[1])):
                if q8:
                    ops.store_q8(x[first:], positions[first:], rows, cache)
            ops.attention(ws, a, first, rows, keys, values, self.q8, ws.acts if quantized else None, self.sinks)
        att = ws.view(ws.att, self.q_width)
        if self.turn_values:
            ops.rotate(att, n, self.turn_values)
        if a.output_gate:
            quantized = self.o.quantized
            ops.sigmoid_mul(att, gate, n, ws.acts if quantized else None)
        residual(ws, self.o, att, n, self.post_norm, self.residual_scale, prepared=quantized, bias=self.o_bias)

    def _head_norms(self, q: cupy.ndarray, k: cupy.ndarray, n: int) -> None:
        """q_norm and k_norm in place, over each head or across the heads (the norm's width says which)."""
        if self.q_norm is not None:
            self.q_norm(q, n * self.q_width // self.q_norm.weight.size, q)
            self.k_norm(k, n * self.kv_width // self.k_norm.weight.size, k)


class GpuShortConv:
    def __init__(self, s: ShortConv, matrix: Matrices, residual_scale: float):
        self.norm, self.residual_scale = GpuNorm(s.norm), residual_scale
        self.in_proj, self.out_proj = matrix(s.in_proj), matrix(s.out_proj)
        self.weights = vector(s.conv)

    def run(self, ws: Workspace, n: int, kept: cupy.ndarray) -> None:
        """ws.x[:n] += this block's output; kept: its rows of the sequence ([context, n_embd] float32)."""
        h, prepared = _norm_input(ws, self.norm, n, wants_int8(self.in_proj))
        bcu = ws.view(ws.gate, self.in_proj.rows)
        products(ws, h, n, [(self.in_proj, bcu, None)], prepared=prepared)
        ops.short_conv(bcu, ws.inputs[1], n, kept, self.weights, ws.h)
        residual(ws, self.out_proj, ws.h, n, None, self.residual_scale)


class GpuFeedForward:
    def __init__(self, f: GatedFeedForward, matrix: Matrices, residual_scale: float):
        self.norm, self.post_norm = _optional(f.norm), _optional(f.post_norm)
        self.residual_scale = residual_scale
        self.gate, self.up, self.down = (matrix(w) for w in (f.gate, f.up, f.down))
        self.activation = f.activation
        self.width = self.gate.rows

    def run(self, ws: Workspace, n: int) -> None:
        h, prepared = _norm_input(ws, self.norm, n, wants_int8(self.gate, self.up))
        g = self._gated(ws, h, n, prepared)
        residual(ws, self.down, g, n, self.post_norm, self.residual_scale, prepared=True)

    def feed(self, ws: Workspace, h: cupy.ndarray, n: int, prepared: bool, out: cupy.ndarray) -> None:
        """out[:n] = down(act(gate(h)) * up(h)) (a mixture's shared expert, on its normed input h)."""
        products(ws, self._gated(ws, h, n, prepared), n, [(self.down, out, None)], prepared=True)

    def _gated(self, ws: Workspace, h: cupy.ndarray, n: int, prepared: bool) -> cupy.ndarray:
        """act(gate(h)) * up(h) in ws.gate, and its int8 blocks in ws.acts where down takes them."""
        g, u = ws.view(ws.gate, self.width), ws.view(ws.up, self.width)
        products(ws, h, n, [(self.gate, g, None), (self.up, u, None)], prepared=prepared)
        ops.gate(g, u, n, self.activation, ws.acts if self.down.quantized else None)
        return g


class GpuExperts:
    """A mixture of experts (docs/experts.md): routing on the GPU, each (row, rank) pair's products by its expert's
    matrices (a prompt's pairs grouped by expert, so each expert's weights are read once a tile of its pairs), then
    each row's weighted sum in rank order with the shared expert's output. With every expert on
    the GPU there is no host round trip, so a decode step stays one graph; under Flywheel (cache), the pass reads
    the picked experts back to copy over those not in a slot."""

    def __init__(self, m: Experts, matrix: Matrices, residual_scale: float, cache: Optional[ExpertCache] = None):
        self.block, self.residual_scale, self.cache = m, residual_scale, cache
        self.norm = GpuNorm(m.norm)
        self.router, self.router_bias = matrix(m.router), _bias(m.router_bias)
        self.gate, self.up, self.down = cache.matrices if cache else (matrix(w) for w in (m.gate, m.up, m.down))
        # each expert's biases [n_expert * rows] (gpt-oss), or under Flywheel each slot's
        self.biases = cache.biases if cache else tuple(_bias(w) for w in (m.gate_bias, m.up_bias, m.down_bias))
        self.bias = _bias(m.selection_bias)
        self.shared = GpuFeedForward(m.shared, matrix, 1.0) if m.shared is not None else None
        self.shared_gate = matrix(m.shared_gate) if m.shared_gate is not None else None
        self.width = m.gate.shape[1]
        self.int8 = wants_int8(self.gate, self.up, *((self.shared.gate, self.shared.up) if self.shared else ()))
        # prompts group the pairs by expert for the tensor cores' products (ops.grouped_expert_products)
        self.grouped = self.gate.type == self.up.type and all(x.quantized for x in (self.gate, self.up, self.down))

    def run(self, ws: Workspace, n: int) -> None:
        m, pairs, d = self.block, n * self.block.n_used, ws.x.shape[1]
        h, prepared = _norm_input(ws, self.norm, n, self.int8)
        logits = ws.view(ws.router, m.n_expert)
        products(ws, h, n, [(self.router, logits, self.router_bias)], prepared=True)
        ops.route(logits, n, m, self.bias, ws.expert_ids, ws.expert_weights)
        picked = ws.expert_ids[:pairs].get(stream=cupy.cuda.get_current_stream()) if self.cache else None
        y = ws.view(ws.expert_out, d, pairs)
        for _ in self._batches(ws, picked):
            self._products(ws, h, n, y)
        gates = None
        if self.shared is not None:
            self.shared.feed(ws, h, n, prepared, ws.y)
            if self.shared_gate is not None:
                gates = ws.shared_gates[:n].reshape(n, 1)
                products(ws, h, n, [(self.shared_gate, gates, None)], prepared=True)
        ops.combine_experts(y, ws.expert_weights, n, m.n_used, ws.y, self.shared is not None, gates)
        ops.add(ws.x, ws.y, n, self.residual_scale)

    def _products(self, ws: Workspace, h: cupy.ndarray, n: int, y: cupy.ndarray) -> None:
        """y[p] = down(act(gate(h)) * up(h)) of the expert of each pair p in ws.expert_ids (ids < 0 left alone), h:
        [n, d]. From MMA_FROM rows on, grouped by expert (gate and up then hold the grouped positions)."""
        m, pairs, d = self.block, n * self.block.n_used, y.shape[1]
        gate, up = ws.view(ws.expert_gate, self.width, pairs), ws.view(ws.expert_up, self.width, pairs)
        acts = ws.expert_acts if self.down.quantized else None
        gate_bias, up_bias, down_bias = self.biases
        if self.grouped and n >= ops.MMA_FROM:
            ops.group_pairs(ws.expert_ids, pairs, m.n_used, ws.groups)
            ops.grouped_expert_products([(self.gate, gate, gate_bias), (self.up, up, up_bias)], self.width, pairs,
                                        ws.groups, ws.acts, gather=True)
            ops.gate(gate, up, pairs, m.activation, acts)
            ops.grouped_expert_products([(self.down, y, down_bias)], d, pairs, ws.groups, ws.expert_acts,
                                        gather=False)
            return
        for matrix, out, bias in ((self.gate, gate, gate_bias), (self.up, up, up_bias)):
            ops.expert_products(matrix, self.width, ws.expert_ids, m.n_used, pairs, ws.acts, h, out, bias)
        ops.gate(gate, up, pairs, m.activation, acts)
        ops.expert_products(self.down, d, ws.expert_ids, 1, pairs, ws.expert_acts, gate, y, down_bias)

    def _batches(self, ws: Workspace, picked: Optional[np.ndarray]) -> Iterator[None]:
        """Once with every expert on the GPU; under Flywheel once per batch of slots (ExpertCache.batches)."""
        return self.cache.batches(ws.expert_ids, picked) if self.cache else iter((None,))


class GpuParallel:
    def __init__(self, p: Parallel, mixers: list, residual_scale: float):
        self.norm, self.mixers, self.residual_scale = GpuNorm(p.norm), mixers, residual_scale

    def run(self, ws: Workspace, n: int, run_mixer: Callable) -> None:
        """ws.x[:n] += (the sum of the mixers' outputs on norm(ws.x)) * residual_scale, in the mixers' order, as
        kinetic_cpu adds them: each mixer (run by run_mixer) adds into ws.sum, from 0, while ws.x names it."""
        self.norm(ws.x, n, ws.shared)
        stream, ws.x, ws.sharing = ws.x, ws.sum, ws.shared
        ws.sum[:n].fill(0)
        for mixer in self.mixers:
            run_mixer(mixer)
        ws.x, ws.sharing = stream, None
        ops.add(ws.x, ws.sum, n, self.residual_scale)


def _convolve(ws: Workspace, x: cupy.ndarray, n: int, tail: cupy.ndarray, weights: cupy.ndarray,
              bias: Optional[cupy.ndarray], out: cupy.ndarray) -> cupy.ndarray:
    """out[:n] = silu(the causal convolution of rows x[:n] after a recurrent layer's tail (+ bias)); -> the window
    [width - 1 + rows, channels] of the tail, then the rows (kinetic.recurrent's RecurrentStates.keeping_tails)."""
    window = ws.window(tail)
    ops.conv_silu(x, ws.window_rows, n, window, weights, bias, out)
    return window[ws.lead - len(tail) :]


class GpuMamba2:
    def __init__(self, m: Mamba2, matrix: Matrices, residual_scale: float):
        self.block, self.residual_scale = m, residual_scale
        self.norm = _optional(m.norm)
        self.in_proj, self.out_proj = matrix(m.in_proj), matrix(m.out_proj)
        self.conv, self.conv_bias = vector(m.conv), _bias(m.conv_bias)
        self.vectors = tuple(vector(w) for w in (m.dt_bias, m.a, m.d))
        self.out_norm = vector(m.out_norm.weight) if m.out_norm is not None else None
        self.group_ones = cupy.ones(m.out_proj.shape[1] // m.n_group, cupy.float32)  # x * 1 is exact
        self.d_inner, self.channels = m.out_proj.shape[1], m.conv.shape[0]
        self.widths = mix_widths(m)

    def run(self, ws: Workspace, n: int, states, layer: int, first: int) -> None:
        """ws.x[:n] += this block's output; states: the sequence's RecurrentStates, this block's is `layer` (its
        convolution's tail, then its scan); first: the pass's first position."""
        m = self.block
        h, prepared = _norm_input(ws, self.norm, n, wants_int8(self.in_proj))
        (zvdt,), (conv, y) = (ws.carve(buffer, widths) for buffer, widths in zip((ws.mix_in, ws.mix), self.widths))
        products(ws, h, n, [(self.in_proj, zvdt, None)], prepared=prepared)
        v, dt = zvdt[:, self.d_inner : self.d_inner + self.channels], zvdt[:, self.d_inner + self.channels :]
        window = _convolve(ws, v, n, states.tail(layer), self.conv, self.conv_bias, conv)

        def step(rows: slice, state_in: cupy.ndarray, state_out: cupy.ndarray) -> cupy.ndarray:
            ops.ssm_scan(conv[rows], dt[rows], rows.stop - rows.start, m, self.vectors, state_in, state_out, y[rows])
            return y[rows]

        states.scan(layer, n, first, states.keeping_tails(layer, window, step))
        ops.silu_gate_rows(y, zvdt, n)  # y * silu(z): z leads each row
        if self.out_norm is not None:  # each group normed with ones, then times its weights
            groups = y.reshape(-1, self.group_ones.size)
            ops.rms_norm(groups, n * m.n_group, self.group_ones, m.out_norm.eps, groups)
            ops.mul_rows(y, self.out_norm, n)
        residual(ws, self.out_proj, y, n, None, self.residual_scale)


class GpuDeltaNet:
    def __init__(self, g: GatedDeltaNet, matrix: Matrices, residual_scale: float, rows: int):
        self.block, self.residual_scale = g, residual_scale
        self.norm, self.out_norm = GpuNorm(g.norm), GpuNorm(g.out_norm)
        self.projections = [matrix(w) for w in (g.qkv_proj, g.gate_proj, g.beta_proj, g.alpha_proj)]
        self.out_proj = matrix(g.out_proj)
        self.conv, self.vectors = vector(g.conv), (vector(g.dt_bias), vector(g.a))
        self.ones = cupy.ones(g.head_dim, cupy.float32)
        heads = g.conv.shape[0] // g.head_dim  # a row's q, k and v heads; q's and k's the first 2 n_k_head
        qk = 2 * g.n_k_head
        self.qk_rows = cupy.asarray((np.arange(rows)[:, None] * heads + np.arange(qk)[None, :]).ravel(), cupy.int32)
        self.widths = mix_widths(g)

    def run(self, ws: Workspace, n: int, states, layer: int, first: int) -> None:
        """As GpuMamba2.run."""
        g, hd = self.block, self.block.head_dim
        h, prepared = _norm_input(ws, self.norm, n, wants_int8(*self.projections))
        (qkv, z, beta, alpha), (conv, qk, o) = (ws.carve(buffer, widths)
                                                for buffer, widths in zip((ws.mix_in, ws.mix), self.widths))
        products(ws, h, n, list(zip(self.projections, (qkv, z, beta, alpha), (None,) * 4)), prepared=prepared)
        window = _convolve(ws, qkv, n, states.tail(layer), self.conv, None, conv)
        # q and k over each head: x / sqrt(sum x^2 + eps) as llama.cpp takes it, an RMS norm with eps / head_dim
        # times 1 / sqrt(head_dim)
        pieces = conv.reshape(-1, hd)
        ops.rms_norm(pieces, n * 2 * g.n_k_head, self.ones, g.l2_eps / hd, qk.reshape(-1, hd), rows=self.qk_rows)
        ops.scale(qk, n, 1 / math.sqrt(hd))
        v = conv[:, 2 * g.n_k_head * hd :]

        def step(rows: slice, state_in: cupy.ndarray, state_out: cupy.ndarray) -> cupy.ndarray:
            ops.delta_net_scan(qk[rows], v[rows], beta[rows], alpha[rows], rows.stop - rows.start, g, self.vectors,
                               state_in, state_out, o[rows])
            return o[rows]

        states.scan(layer, n, first, states.keeping_tails(layer, window, step))
        heads = o.reshape(-1, hd)
        self.out_norm(heads, n * g.n_v_head, heads)
        quantized = self.out_proj.quantized
        ops.gate(z, o, n, "silu", ws.acts if quantized else None)  # z = silu(z) * normed o
        residual(ws, self.out_proj, z, n, None, self.residual_scale, prepared=quantized)
