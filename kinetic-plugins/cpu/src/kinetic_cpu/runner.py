"""Running a Stack on the CPU: weights are read from the memory-mapped file (the 32-weight block types from
a copy kept in runs, kernels/block32.py); each sequence owns a KV cache."""

from __future__ import annotations

import contextlib
import math
import platform
import weakref
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

import numpy as np

from kinetic import rotary
from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, LayerNorm, Mamba2, Mixer,
                                      Norm, Parallel, Rope, ShortConv, Stack, Weight)
from kinetic.contracts.device import Row, UploadOptions, cache_rotations, check_cache_types, linear_batches
from kinetic.experts import route, swiglu_oai
from kinetic.visibility import visible_spans
from kinetic_cpu import compile_clock, ops
from kinetic_cpu.aside import Aside, Pipeline, Waitable
from kinetic_cpu.cache import CpuSequence, conv_rows, stored
from kinetic_cpu.home import at_home
from kinetic_cpu.kernels import delta_net, short_conv, ssm_scan
from kinetic_cpu.kernels.dots import AVX2
from kinetic_cpu.kernels.driver import KERNELS
from kinetic_cpu.kernels.matmul import Matrix, activations, table_products
from kinetic_cpu.mapped_pages import drop_pages, drop_rows, in_file_map
from kinetic_cpu.matrices import kernel_types
from kinetic_cpu.shortlist import Shortlist
from kinetic_cpu.torque import Torque

Spans = list[tuple[CpuSequence, slice]]  # each sequence of a pass, with its rows in the pass


class CpuRunner:
    device_name = "the CPU"
    device_class = f"cpu-{platform.machine()}-{'avx2' if AVX2 else 'scalar'}"  # int8 dots with or without AVX2
    shares_passes = True  # one pass over the weights for every sequence's rows (forward)
    context_note = None  # it never shrinks the context asked for

    @property
    def compile_seconds(self) -> float:
        return compile_clock.CLOCK.seconds

    def __init__(self, stack: Stack, options: UploadOptions, threads: int):
        check_cache_types(stack, options.cache_types, self.device_name)
        self.stack = stack
        self.threads = threads  # numba's, for every pass (kinetic_cpu.home)
        self.context_length = options.context_length or stack.context_length
        self.cache_types = options.cache_types
        self._norms: dict[str, np.ndarray] = {}
        self._matrices: dict[str, Matrix] = {}
        self._shortlist: Optional[Shortlist] = None  # on once start_shortlist() has kept its copy
        self._torque: Optional[Torque] = None  # on once start_torque() has made its plan
        # technologies starting once their kernels are compiled: each its steps, and the kernels it waits for
        self._starting: dict[str, tuple[Iterator, Waitable]] = {}
        # the product kernels of each weight type, compiled here or in another process on a first load
        self._product_kernels = Pipeline("products", (str(stack.output.model.path),), kernel_types(stack))
        self._left_out: frozenset[str] = frozenset()  # weight types whose products a warming pass leaves out
        self._predictor: Optional[CpuRunner] = None
        self._parent: Optional[CpuRunner] = None  # the runner whose prediction block this one runs
        self._spare_rows: list[list[np.ndarray]] = []  # finished sequences' convolution rows (cache.conv_rows)

    def predictor(self) -> Optional["CpuRunner"]:
        """A runner of stack.prediction whose weights are this one's (the output layer, often the largest, too)."""
        if self.stack.prediction is None:
            return None
        if self._predictor is None:
            options = UploadOptions(context_length=self.context_length, cache_types=self.cache_types)
            self._predictor = CpuRunner(self.stack.prediction, options, self.threads)
            self._predictor._norms, self._predictor._matrices = self._norms, self._matrices
            self._predictor._parent = self
        return self._predictor

    def new_sequence(self) -> CpuSequence:
        rows = self._spare_rows.pop() if self._spare_rows else conv_rows(self.stack, self.context_length)
        seq = CpuSequence(self.stack, self.context_length, self.cache_types, self._replay, rows)
        weakref.finalize(seq, self._spare_rows.append, rows)
        return seq

    def _replay(self, seq: CpuSequence, tokens: np.ndarray, first: int) -> None:
        """Append tokens at positions first, first + 1, ... to seq again (a cut between kept recurrent states)."""
        self.forward([Row(seq, int(t), first + i, parent=i - 1) for i, t in enumerate(tokens)])

    def load(self, blob: bytes, into: Optional[CpuSequence] = None) -> CpuSequence:
        seq = into if into is not None else self.new_sequence()
        seq.restore(blob)
        return seq

    def forward(self, rows: Sequence[Row]) -> np.ndarray:
        """Rows of linear batches of one or more sequences; logits of the rows that ask, in row order.

        One pass for all rows: each matrix is read once for every sequence's rows (Convoy); only attention
        runs per sequence. The pass holds the rows grouped by sequence, which changes no bit: every kernel
        computes a row on its own (docs/exactness.md, section 1). It runs on the home thread, whichever
        thread asks (kinetic_cpu.home)."""
        return at_home(self.threads, self._forward, rows)

    def _forward(self, rows: Sequence[Row]) -> np.ndarray:
        if self._starting and not self._left_out:
            self._settle(wait=False)
        batches = linear_batches(rows, "the CPU")
        order = [i for _, indices in batches for i in indices]
        spans, start = [], 0
        for seq, indices in batches:
            spans.append((seq, slice(start, start + len(indices))))
            start += len(indices)
        hidden = self._run([rows[i] for i in order], spans)
        place = {i: j for j, i in enumerate(order)}
        wanted = [i for i, row in enumerate(rows) if row.hidden or row.logits]  # each normed once, for both
        normed = self._norm(self.stack.output_norm, hidden[[place[i] for i in wanted]])
        for i, x in zip(wanted, normed):
            if rows[i].hidden:
                rows[i].sequence.hidden[rows[i].position] = x
        asks = [j for j, i in enumerate(wanted) if rows[i].logits]
        if not asks:
            return np.empty((0, self.stack.n_vocab), np.float32)
        return self._logits(normed[asks], [rows[wanted[j]].top for j in asks])

    def _run(self, batch: list[Row], spans: Spans) -> np.ndarray:
        """Append each span of batch (its rows of one sequence, in order) to that sequence; the final hidden
        states [n, n_embd]."""
        tokens = np.array([row.token for row in batch], dtype=np.int64)
        positions = np.array([row.position for row in batch], dtype=np.int64)
        x = self._embed(tokens, batch)
        for seq, span in spans:
            if seq.recurrent is not None:
                seq.recurrent.tokens[positions[span]] = tokens[span]
        numbers = _Numbers(_Attending(spans, positions))

        def unfused(block, x: np.ndarray) -> np.ndarray:
            return self._block(block, x, spans, numbers, positions)

        if self._torque is not None and len(batch) <= self._torque.most_rows:
            x = self._torque.run(x, numbers, unfused)
        else:
            for block in self.stack.blocks:
                x = unfused(block, x)
        for seq, span in spans:
            seq.n_tokens = int(positions[span.stop - 1]) + 1
        return x

    def _block(self, block, x: np.ndarray, spans: Spans, numbers: "_Numbers", positions: np.ndarray) -> np.ndarray:
        """x ([n, n_embd] float32) through the block, a kernel call at a time."""
        if isinstance(block, Parallel):
            h = self._norm(block.norm, x)
            outs = [self._mixer(m, h, spans, numbers, positions) for m in block.mixers]
            out = outs[0]
            for more in outs[1:]:
                out = out + more
        else:
            out = self._mixer(block, x, spans, numbers, positions)
        residual_scale = np.float32(self.stack.residual_scale)
        return self._norm(getattr(block, "residual_norm", None), x + (out if residual_scale == 1 else
                                                                        out * residual_scale))

    def _mixer(self, block: Mixer, x: np.ndarray, spans: Spans, numbers: "_Numbers",
               positions: np.ndarray) -> np.ndarray:
        """One mixer's output for rows x; numbers counts the kept state of each kind so far, in block order."""
        if isinstance(block, Attention):
            numbers.attentions += 1
            return self._attention(block, x, numbers.attending, numbers.attentions - 1)
        if isinstance(block, ShortConv):
            numbers.rows += 1
            return self._short_conv(block, x, spans, numbers.rows - 1, positions)
        if isinstance(block, (Mamba2, GatedDeltaNet)):
            numbers.states += 1
            run = self._mamba2 if isinstance(block, Mamba2) else self._delta_net
            return run(block, x, spans, numbers.states - 1, positions)
        if isinstance(block, Experts):
            return self._experts(block, x)
        return self._feed_forward(block, x)

    def _embed(self, tokens: np.ndarray, batch: list[Row]) -> np.ndarray:
        """The rows' inputs: their tokens' embeddings, or with Stack.input those and their vectors through it."""
        rows = self.stack.embedding.rows_float32(tokens)
        if self._copied(self.stack.embedding):  # a tied output layer's copy holds the rows already
            drop_rows(self.stack.embedding.raw(), tokens)
        x = (rows * np.float32(self.stack.embedding_scale)).astype(np.float32)
        if self.stack.token_types is not None:
            x = x + self.vector(self.stack.token_types)[: self.stack.n_embd]  # row 0: sentence A's
        if self.stack.position_embedding is not None:
            positions = np.array([row.position for row in batch], np.int64)
            x = x + self.vector(self.stack.position_embedding).reshape(-1, self.stack.n_embd)[positions]
        x = self._norm(self.stack.embedding_norm, x)
        given = self.stack.input
        if given is None:
            return x
        vectors = np.array([row.vector for row in batch], np.float32)
        halves = [self._norm(given.enorm, x), self._norm(given.hnorm, vectors)]
        return self._linear(given.eh_proj, np.concatenate(halves, axis=1))

    def _norm(self, norm: Optional[Norm], x: np.ndarray) -> np.ndarray:
        """norm over x's last axis in pieces of the norm's width (a head, or all heads together); x itself
        without one."""
        if norm is None:
            return x
        weight = self.vector(norm.weight)
        pieces = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, len(weight))
        if isinstance(norm, LayerNorm):
            bias = self.vector(norm.bias) if norm.bias is not None else np.zeros_like(weight)
            return ops.layer_norm(pieces, weight, bias, norm.eps).reshape(x.shape)
        return ops.rms_norm(pieces, weight, norm.eps).reshape(x.shape)

    def vector(self, weight: Weight) -> np.ndarray:
        """The weight as float32 values in one row, kept for every later pass."""
        if weight.key not in self._norms:
            self._norms[weight.key] = np.ascontiguousarray(weight.to_float32().reshape(-1), dtype=np.float32)
            drop_pages(weight.raw())  # and the neighbouring matrices' pages its read mapped
        return self._norms[weight.key]

    def _copied(self, weight: Weight) -> bool:
        """Whether the weight's matrix is held as a copy laid out for the kernels, its file pages given back."""
        matrix = self._matrices.get(weight.key)
        return matrix is not None and matrix.blocks is not None and not in_file_map(matrix.blocks)

    def matrix(self, weight: Weight, expert: Optional[int] = None) -> Matrix:
        """The weight's matrix, or with expert e the e-th of its stacked matrices ([n_expert, rows, k])."""
        key = weight.key if expert is None else f"{weight.key}#{expert}"
        if key not in self._matrices:
            if expert is None and weight.type.name in self._left_out:
                return _LeftOut(weight)
            self._wait_for_products(weight.type.name)
            raw = weight.raw()
            if expert is not None:
                rows = weight.shape[1]
                raw = raw[expert * rows : (expert + 1) * rows]
            self._matrices[key] = Matrix(raw, weight.type.id)
        return self._matrices[key]

    def _linears(self, x: np.ndarray, *weights: tuple[Weight, Optional[Weight]]) -> list[np.ndarray]:
        """x ([n, k] float32) times each (weight, bias)."""
        ys = self._products(x, [self.matrix(weight) for weight, _ in weights])
        return [y + self.vector(bias) if bias is not None else y for y, (_, bias) in zip(ys, weights)]

    def _products(self, x: np.ndarray, matrices: list[Matrix]) -> list[np.ndarray]:
        """x ([n, k] float32) times each matrix; matrices that take the same activations share them."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        shared: dict[str, tuple] = {}
        out = []
        threads = 1 if self._left_out else self.threads  # warming: the loop sharing a product compiles aside
        for matrix in matrices:
            if matrix.activations not in shared:
                shared[matrix.activations] = activations(matrix.activations, x)
            out.append(matrix(x, shared[matrix.activations], threads))
        return out

    def _linear(self, weight: Weight, x: np.ndarray) -> np.ndarray:
        return self._linears(x, (weight, None))[0]

    def _attention(self, a: Attention, x: np.ndarray, attending: "_Attending", layer: int) -> np.ndarray:
        h = self._norm(a.norm, x)
        n = len(x)
        q, k, v = self._linears(h, (a.q, a.q_bias), (a.k, a.k_bias), (a.v, a.v_bias))
        if a.output_gate:  # each head's queries, then its gate
            halves = q.reshape(n, a.n_head, 2, a.head_dim)
            q, gate = halves[:, :, 0].reshape(n, -1), halves[:, :, 1].reshape(n, -1)
        if not a.norms_after_rope:
            q, k = self._norm(a.q_norm, q), self._norm(a.k_norm, k)
        q = np.ascontiguousarray(q).reshape(n, a.n_head, a.head_dim)
        k = np.ascontiguousarray(k).reshape(n, a.n_head_kv, a.head_dim)
        v = v.reshape(n, a.n_head_kv, a.head_dim)
        self._rotate(a.rope, attending, q, k)
        if a.norms_after_rope:
            q, k = self._norm(a.q_norm, q), self._norm(a.k_norm, k)
        turn_keys, turn_values = cache_rotations(a.head_dim, self.cache_types)
        if turn_keys:
            q, k = (ops.rotated(x.reshape(-1, a.head_dim), turn_keys).reshape(x.shape) for x in (q, k))
        if turn_values:
            v = ops.rotated(v.reshape(-1, a.head_dim), turn_values).reshape(v.shape)
        # q meets the keys at float16 precision, as ggml's F16 dot product takes it (with q8_0 keys too: the
        # products stay exact in float64, kernels/attention.py)
        attended = self._attend_each(a, layer, attending, ops.to_half(q), k, v)
        if turn_values:
            attended = ops.rotated(attended.reshape(-1, a.head_dim), turn_values).reshape(attended.shape)
        if a.output_gate:
            attended = attended * ops.sigmoid(gate)
        out = self._linears(attended, (a.o, a.o_bias))[0]
        return self._norm(a.post_norm, out)

    def _attend_each(self, a: Attention, layer: int, attending: "_Attending", q: np.ndarray, k: np.ndarray,
                     v: np.ndarray) -> np.ndarray:
        """Each row's keys and values [n, n_kv, head_dim] (float32) into its sequence's cache, then every row
        attends in one call, each to its own sequence's cache. -> [n, n_head * head_dim]"""
        first = attending.spans[0][0]  # every sequence's cache has the shape and type of its
        keys, values, addresses = first.keys[layer], first.values[layer], attending.addresses[layer]
        key_type, value_type = self.cache_types
        ops.store(keys, values, addresses, attending.cache_of_row, attending.positions, stored(k, key_type),
                  stored(v, value_type))
        firsts, lasts = attending.visible(a.sliding_window, a.causal)
        sinks = self.vector(a.sinks) if a.sinks is not None else None
        return ops.attend(q, keys, values, addresses, attending.cache_of_row, firsts, lasts, a.scale, sinks)

    def _short_conv(self, s: ShortConv, x: np.ndarray, spans: Spans, layer: int, positions: np.ndarray) -> np.ndarray:
        b, c, u = np.split(self._linear(s.in_proj, self._norm(s.norm, x)), 3, axis=1)
        return self._linear(s.out_proj, c * self._convolve(s.conv, b * u, spans, layer, positions))

    def _convolve(self, conv: Weight, v: np.ndarray, spans: Spans, layer: int, positions: np.ndarray) -> np.ndarray:
        """Each sequence's rows of v ([n, channels]) join its kept rows `layer` at their positions, then convolve
        them (kernels/short_conv.py). -> [n, channels] float32"""
        weights = self.vector(conv).reshape(conv.shape)
        convolved = np.empty(v.shape, np.float32)
        for seq, span in spans:
            at = positions[span]
            seq.conv_rows[layer][at] = v[span]
            convolved[span] = short_conv.convolve(seq.conv_rows[layer], at, weights)
        return convolved

    def _windows(self, conv: Weight, v: np.ndarray, spans: Spans, layer: int) -> tuple[np.ndarray, list]:
        """Each sequence's rows of v ([n, channels]) after recurrent layer `layer`'s tail (kinetic.recurrent),
        convolved (kernels/short_conv.py); -> [n, channels] float32, and each span's window
        [width - 1 + rows, channels]."""
        weights = self.vector(conv).reshape(conv.shape)
        convolved = np.empty(v.shape, np.float32)
        windows = []
        for seq, span in spans:
            windows.append(np.concatenate([seq.recurrent.tail(layer), v[span]]))
            convolved[span] = short_conv.convolve(windows[-1], np.arange(conv.shape[1] - 1, len(windows[-1])),
                                                  weights)
        return convolved, windows

    def _mamba2(self, m: Mamba2, x: np.ndarray, spans: Spans, layer: int, positions: np.ndarray) -> np.ndarray:
        """Each sequence's rows through its Mamba-2 state `layer` (its convolution's tail, then its scan), in
        order (kinetic.recurrent)."""
        d_inner, channels = m.out_proj.shape[1], m.conv.shape[0]
        zvdt = self._linear(m.in_proj, self._norm(m.norm, x))
        z, v, dt = zvdt[:, :d_inner], zvdt[:, d_inner : d_inner + channels], zvdt[:, d_inner + channels :]
        convolved, windows = self._windows(m.conv, v, spans, layer)
        if m.conv_bias is not None:
            convolved = convolved + self.vector(m.conv_bias)
        activated = ops.gate(convolved, np.ones_like(convolved), False)  # silu(v) * 1: silu(v)
        dt = np.ascontiguousarray(dt)
        dt_bias, a, d = self.vector(m.dt_bias), self.vector(m.a), self.vector(m.d)
        y = np.empty((len(x), d_inner), np.float32)
        for (seq, span), window in zip(spans, windows):
            v_rows, dt_rows = activated[span], dt[span]

            def step(rows: slice, state_in: np.ndarray, state_out: np.ndarray) -> np.ndarray:
                return ssm_scan.scan(v_rows[rows], dt_rows[rows], dt_bias, a, d, state_in, state_out, m.n_group)

            y[span] = seq.recurrent.scan(layer, span.stop - span.start, int(positions[span.start]),
                                         seq.recurrent.keeping_tails(layer, window, step))
        gated = ops.gate(np.ascontiguousarray(z), y, False)
        if m.out_norm is not None:  # a row per group; x * 1 is exact: then each group's weights, as one norm would
            ones = np.ones(d_inner // m.n_group, np.float32)
            normed = ops.rms_norm(gated.reshape(-1, len(ones)), ones, m.out_norm.eps).reshape(len(x), d_inner)
            gated = normed * self.vector(m.out_norm.weight)
        return self._linear(m.out_proj, gated)

    def _delta_net(self, g: GatedDeltaNet, x: np.ndarray, spans: Spans, layer: int,
                   positions: np.ndarray) -> np.ndarray:
        """Each sequence's rows through its Gated DeltaNet state `layer` (its convolution's tail, then its scan),
        in order (kinetic.recurrent, kernels/delta_net.py)."""
        n, hd = len(x), g.head_dim
        h = self._norm(g.norm, x)
        qkv_in, z, beta, alpha = self._linears(h, (g.qkv_proj, None), (g.gate_proj, None), (g.beta_proj, None),
                                               (g.alpha_proj, None))
        convolved, windows = self._windows(g.conv, qkv_in, spans, layer)
        qkv = ops.gate(convolved, np.ones_like(convolved), False)  # silu
        keys = g.n_k_head * hd
        q, k = (self._l2_norm(qkv[:, at : at + keys], hd, g.l2_eps).reshape(n, g.n_k_head, hd) for at in (0, keys))
        v = np.ascontiguousarray(qkv[:, 2 * keys :]).reshape(n, g.n_v_head, hd)
        dt_bias, a = self.vector(g.dt_bias), self.vector(g.a)
        o = np.empty((n, g.n_v_head, hd), np.float32)
        for (seq, span), window in zip(spans, windows):
            parts = (q[span], k[span], v[span], beta[span], alpha[span])

            def step(rows: slice, state_in: np.ndarray, state_out: np.ndarray) -> np.ndarray:
                return delta_net.scan(*(part[rows] for part in parts), dt_bias, a, state_in, state_out)

            o[span] = seq.recurrent.scan(layer, span.stop - span.start, int(positions[span.start]),
                                         seq.recurrent.keeping_tails(layer, window, step))
        normed = self._norm(g.out_norm, o).reshape(n, -1)
        return self._linear(g.out_proj, ops.gate(np.ascontiguousarray(z), normed, False))

    @staticmethod
    def _l2_norm(x: np.ndarray, width: int, eps: float) -> np.ndarray:
        """Each piece of width values divided by sqrt(its sum of squares + eps), as llama.cpp computes it: an RMS
        norm with eps / width, then times 1 / sqrt(width) (its build_gdn_l2_norm)."""
        pieces = np.ascontiguousarray(x).reshape(-1, width)
        normed = ops.rms_norm(pieces, np.ones(width, np.float32), eps / width) * np.float32(1 / math.sqrt(width))
        return normed.reshape(x.shape)

    def _rotate(self, rope: Rope, attending: "_Attending", *parts: np.ndarray) -> None:
        """Rotate each part ([n, heads, head_dim] float32) in place by the rows' positions."""
        cos, sin = self.angles(rope, attending)
        for part in parts:
            ops.rope(part, cos, sin, rope.neox)

    def angles(self, rope: Rope, attending: "_Attending") -> tuple[np.ndarray, np.ndarray]:
        """cos and sin of the rows' rotation angles by rope ([n, n_dims / 2] float64 each, ops.rope_angles),
        worked out once a pass for every block that has it."""
        if id(rope) not in attending.angles:
            half = rope.n_dims // 2
            factors = self.vector(rope.freq_factors) if rope.freq_factors is not None else np.ones(half, np.float32)
            attending.angles[id(rope)] = ops.rope_angles(attending.positions, rope.n_dims, rope.base,
                                                         rotary.pair_scales(rope), factors, rotary.magnitude(rope))
        return attending.angles[id(rope)]

    def _feed_forward(self, f: GatedFeedForward, x: np.ndarray) -> np.ndarray:
        h = self._norm(f.norm, x)
        if f.gate is None:  # act(up): act(up) * 1, which is exact
            up = self._linears(h, (f.up, f.up_bias))[0]
            gated = ops.gate(up, np.ones_like(up), f.activation == "gelu_tanh")
        else:
            gate, up = self._linears(h, (f.gate, None), (f.up, f.up_bias))
            gated = ops.gate(gate, up, f.activation == "gelu_tanh")
        out = self._linears(gated, (f.down, f.down_bias))[0]
        return self._norm(f.post_norm, out)

    def _experts(self, m: Experts, x: np.ndarray) -> np.ndarray:
        """Each row's experts' feed-forwards weighted and summed in its rank order (kinetic.experts), then the
        shared expert's: a row's bits do not depend on its batch."""
        h = self._norm(m.norm, x)
        bias = self.vector(m.selection_bias) if m.selection_bias is not None else None
        chosen, weights = route(m, self._linears(h, (m.router, m.router_bias))[0], bias)  # [n, n_used] each
        picked = self._one_row_experts(m, h, chosen[0]) if len(h) == 1 else self._experts_by_expert(m, h, chosen)
        picked = picked * weights.T[:, :, None]  # [rank, n, n_embd]
        out = picked[0]
        for more in picked[1:]:
            out = out + more
        if m.shared is None:
            return out
        shared = self._feed_forward(m.shared, h)
        if m.shared_gate is not None:
            shared = shared * ops.sigmoid(self._linear(m.shared_gate, h))
        return out + shared

    def _experts_by_expert(self, m: Experts, h: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """[rank, n, n_embd]: each row's experts' outputs in its rank order, each expert's products for the rows
        that picked it (its weights read once for them all)."""
        picked = np.empty((m.n_used, *h.shape), np.float32)
        for e in np.unique(chosen):
            rows, ranks = np.nonzero(chosen == e)
            gate, up = self._products(h[rows], [self.matrix(m.gate, e), self.matrix(m.up, e)])
            gate, up = self._expert_bias(gate, m.gate_bias, [e]), self._expert_bias(up, m.up_bias, [e])
            gated = self._expert_gate(m, gate, up)
            picked[ranks, rows] = self._expert_bias(self._products(gated, [self.matrix(m.down, e)])[0], m.down_bias,
                                                    [e])
        return picked

    def _one_row_experts(self, m: Experts, h: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """[rank, 1, n_embd]: a one-row pass's experts' outputs (h: [1, n_embd]; chosen: [n_used]), each kind of
        product for all of them in one parallel call (table_products), the bits of _experts_by_expert's."""
        n = len(chosen)
        gate_up = self._table_products(h, [self.matrix(w, e) for w in (m.gate, m.up) for e in chosen], [0] * 2 * n)
        gate = self._expert_bias(gate_up[:n], m.gate_bias, chosen)
        up = self._expert_bias(gate_up[n:], m.up_bias, chosen)
        gated = self._expert_gate(m, gate, up)
        down = self._table_products(gated, [self.matrix(m.down, e) for e in chosen], list(range(n)))
        return self._expert_bias(down, m.down_bias, chosen)[:, None]

    def _table_products(self, x: np.ndarray, matrices: list[Matrix], tokens: list[int]) -> np.ndarray:
        """[len(matrices), rows]: matrix i times x[tokens[i]], in one parallel call for each type among them (the
        matrices have one row count)."""
        out = np.empty((len(matrices), matrices[0].rows), np.float32)
        for name in dict.fromkeys(matrix.type.name for matrix in matrices):
            at = [i for i, matrix in enumerate(matrices) if matrix.type.name == name]
            group = [matrices[i] for i in at]
            if group[0].blocks is None:  # a type without a step kernel: a product each
                out[at] = [matrix(x[tokens[i] : tokens[i] + 1], threads=self.threads)[0] for i, matrix in zip(at, group)]
            else:
                acts = activations(group[0].activations, x)
                out[at] = table_products(group, acts, [tokens[i] for i in at], self.threads)
        return out

    @staticmethod
    def _expert_gate(m: Experts, gate: np.ndarray, up: np.ndarray) -> np.ndarray:
        """act(gate) * up of experts' products ([rows, width] each), one way for both paths, so their bits agree."""
        return swiglu_oai(gate, up) if m.activation == "swiglu_oai" else ops.gate(gate, up, False)

    def _expert_bias(self, y: np.ndarray, bias: Optional[Weight], experts: Sequence[int]) -> np.ndarray:
        """y ([len(experts) or rows, width]) plus each expert's row of a stacked bias ([n_expert, width]), where there
        is one."""
        return y if bias is None else y + self.vector(bias).reshape(bias.shape)[np.asarray(experts)]

    def _logits(self, x: np.ndarray, tops: Sequence[int]) -> np.ndarray:
        """The logits of x [n, n_embd] (hidden states after the output norm): for a row that reads only its
        tops[t] largest (Row.top), with Shortlist on, those and the others that can be among them; else all."""
        shortlist = self._active_shortlist()
        logits = self._linear(self.stack.output, x) if shortlist is None else shortlist.logits(x, tops)
        return logits if self.stack.logit_scale == 1 else logits * np.float32(self.stack.logit_scale)

    def _active_shortlist(self) -> Optional[Shortlist]:
        """Its own Shortlist, or its parent's where it shares the parent's output layer (a prediction block's)."""
        parent = self._parent
        if self._shortlist is None and parent is not None and parent.stack.output is self.stack.output:
            return parent._shortlist
        return self._shortlist

    @contextlib.contextmanager
    def warming(self) -> Iterator[bool]:
        """For passes whose results nobody reads (Session.warm_up) on a first load: the products of the weight
        types another process is compiling give zeros instead of waiting for it (kinetic_cpu.aside's Pipeline),
        so that this process compiles the kernels between them meanwhile; at the end, it waits for those types.
        Yields whether it leaves any out (then the passes must run again for their kernels to load)."""
        self._left_out = frozenset(self._product_kernels.pending())
        try:
            yield bool(self._left_out)
        finally:
            left_out, self._left_out = self._left_out, frozenset()
            for name in left_out:
                self._wait_for_products(name)

    def _wait_for_products(self, type_name: str) -> None:
        """Return once the type's product kernels are in numba's cache where another process compiles them; the
        wait counts as time spent compiling (compile_seconds)."""
        if type_name in self._product_kernels.pending():
            with compile_clock.CLOCK.during():
                self._product_kernels.wait_for(type_name)

    def start_torque(self) -> bool:
        """Run passes of a few rows as a parallel call a run of the blocks it takes (kinetic_cpu.torque), the
        others between them unfused, from the first pass after its kernels are compiled (kinetic_cpu.aside);
        False where it takes none (or the cache is quantized)."""
        return at_home(self.threads, self._start_torque)

    def _start_torque(self) -> bool:
        if self._torque is None and "torque" not in self._starting:
            if not Torque.takes_a_block(self):
                return False
            self._start("torque", self._torque_steps())
        return True

    def _torque_steps(self) -> Iterator[Waitable]:
        yield self._product_kernels  # its tables hold the matrices
        tables = Torque.tables(self)
        yield Aside(("torque", *(str(int(kind)) for kind in tables.code_kinds())))
        self._torque = Torque(self, tables)

    def start_shortlist(self) -> bool:
        """Keep the output layer's copy for Shortlist (once), from the first pass after its kernels are compiled
        (kinetic_cpu.aside); False where its type has none."""
        return at_home(self.threads, self._start_shortlist)

    def _start_shortlist(self) -> bool:
        output = self.stack.output
        if not exact_scaling(self.stack.logit_scale) or not Shortlist.takes(output.type):
            return False
        if self._shortlist is None and "shortlist" not in self._starting:
            self._start("shortlist", self._shortlist_steps(output))
        return True

    def _shortlist_steps(self, output: Weight) -> Iterator[Waitable]:
        yield self._product_kernels  # the copy is made from the output layer's matrix; its kernels compile after
        yield Aside(("shortlist",))  # theirs, as Torque's, not beside them: on two cores the first answer waits for them
        self._shortlist = Shortlist(self.matrix(output), output.raw())

    def _start(self, name: str, steps: Iterator[Waitable]) -> None:
        """The technology started now where the kernels its steps wait for are in numba's cache, else at the first
        pass after they are."""
        self._starting[name] = steps, next(steps)
        self._settle(wait=False)

    def settle(self) -> None:
        """Wait for the kernels of the technologies starting (kinetic_cpu.aside), and start them."""
        at_home(self.threads, self._settle, True)

    def _settle(self, wait: bool) -> None:
        for name, (steps, kernels) in list(self._starting.items()):
            while kernels.ready(wait):
                try:
                    kernels = next(steps)
                except StopIteration:
                    del self._starting[name]
                    break
                self._starting[name] = steps, kernels


class _Attending:
    """What every attention block of a pass takes alike: the rows' positions, each row's cache (its sequence's
    index in the pass), each layer's caches' addresses [caches, 2] (ops.attend), each row's visible positions by
    kind of block, and the rotary angles of each rope."""

    def __init__(self, spans: Spans, positions: np.ndarray):
        self.spans, self.positions = spans, positions
        self.cache_of_row = np.repeat(np.arange(len(spans)), [span.stop - span.start for _, span in spans])
        self.addresses = np.stack([seq.addresses for seq, _ in spans], axis=1)  # [layers, caches, 2]
        self._visible: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self.angles: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # by id(rope): its cos and sin (_rotate)

    def visible(self, window: Optional[int], causal: bool) -> tuple[np.ndarray, np.ndarray]:
        """Each row's first and last visible position (kinetic.visibility), [n] int64 each."""
        if (window, causal) not in self._visible:
            firsts, lasts = (np.empty(len(self.positions), np.int64) for _ in range(2))
            for _, span in self.spans if not causal else [(None, slice(0, len(self.positions)))]:
                at = self.positions[span]  # a bidirectional row's text ends at its own sequence's last position
                firsts[span], lasts[span] = visible_spans(at, window, causal, int(at.max()))
            self._visible[(window, causal)] = firsts, lasts
        return self._visible[(window, causal)]


@dataclass
class _Numbers:
    """Kept state of each kind numbered so far in a pass, in block order (CpuSequence's lists), and what its
    attention blocks take alike."""

    attending: _Attending
    attentions: int = 0
    rows: int = 0  # short convolutions' input rows
    states: int = 0  # Mamba-2 and Gated DeltaNet states


def exact_scaling(factor: float) -> bool:
    """Whether multiplying by factor keeps every float32 logit's order and ties, as Shortlist's proof needs: a
    power of two only moves the exponent."""
    return math.frexp(factor)[0] == 0.5


class _LeftOut:
    """A matrix a warming pass leaves out (CpuRunner.warming): its products are zeros."""

    def __init__(self, weight: Weight):
        self.rows = weight.shape[0]
        self.activations = KERNELS[weight.type.name].activations

    def __call__(self, x: np.ndarray, acts: tuple, threads: int) -> np.ndarray:  # x: [n, k] float32
        return np.zeros((len(x), self.rows), np.float32)
