"""The blocks on the GPU: the steps (plan.Step) a pass runs for each, their weights uploaded once (Uploads).

Every step reads the pass's row count from the workspace's run buffer, so a block's steps are made once; those
that read a sequence's KV cache are made once per sequence (VkAttention.steps).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from kinetic import rotary
from kinetic.contracts.blocks import Attention, GatedFeedForward, RmsNorm, Rope, Weight
from kinetic_vulkan import kernels
from kinetic_vulkan.plan import LANE_THREADS, MATMUL_THREADS, SPLITS, TILE, Step, Workspace, bind, grid
from kinetic_vulkan.weights import FLOATS, VkMatrix, stackable, storage, vector


class Uploads:
    """The weights and rotary tables on the GPU, each uploaded once (tied weights share a matrix)."""

    def __init__(self, device: Any, binding_limit: int, context: int):
        self.device, self.binding_limit, self.context = device, binding_limit, context
        self._matrices: dict[str, VkMatrix] = {}
        self._vectors: dict[str, Any] = {}
        self._tables: dict[tuple, tuple] = {}

    def matrix(self, *weights: Weight) -> VkMatrix:
        """The weights as one matrix, their rows one after another (weights.stackable)."""
        key = "+".join(w.key for w in weights)
        if key not in self._matrices:
            self._matrices[key] = VkMatrix.of(self.device, list(weights), self.binding_limit)
        return self._matrices[key]

    def vector(self, weight: Optional[Weight]):
        if weight is not None and weight.key not in self._vectors:
            self._vectors[weight.key] = vector(self.device, weight)
        return self._vectors[weight.key] if weight is not None else None

    def biases(self, biases: list[Optional[Weight]], rows: list[int]):
        """A stacked matrix's biases one after another (zeros for a weight without), None where none has one."""
        if all(b is None for b in biases):
            return None
        key = "+".join(b.key if b is not None else f"0*{n}" for b, n in zip(biases, rows))
        if key not in self._vectors:
            values = [b.to_float32().reshape(-1) if b is not None else np.zeros(n, np.float32)
                      for b, n in zip(biases, rows)]
            self._vectors[key] = storage(self.device, np.concatenate(values).astype(np.float32), key)
        return self._vectors[key]

    def table(self, rope: Rope) -> tuple:
        """cos and sin [context, n_dims / 2] float32 (kinetic.rotary.angle_table)."""
        key = (rope.n_dims, rope.base, rope.scale, rope.freq_factors.key if rope.freq_factors else None, rope.yarn,
               rope.attn_factor)
        if key not in self._tables:
            factors = rope.freq_factors.to_float32() if rope.freq_factors is not None else None
            tables = rotary.angle_table(rope, factors, self.context)
            self._tables[key] = tuple(storage(self.device, t.astype(np.float32), "rope") for t in tables)
        return self._tables[key]


def norm_step(up: Uploads, ws: Workspace, norm: RmsNorm, src: Any, dst: Any, width: int, gather: bool = False,
              quantize: bool = False) -> Step:
    """dst = norm(src) over pieces of the norm's width, width / that a row; of the asking rows with gather; also as
    int8 chunks in ws.xq, ws.xd and ws.xs with quantize."""
    piece = norm.weight.shape[0]
    pieces = width // piece
    pipeline = kernels.pipeline(up.device, "norm", WIDTH=piece, EPS=norm.eps, PIECES=pieces, GATHER=gather,
                                QUANTIZE=quantize)
    group = bind(up.device, pipeline, src, dst, up.vector(norm.weight), ws.logit_rows, ws.xq, ws.xd, ws.xs, ws.run)
    return Step(pipeline, group, lambda n, n_logits: grid((n_logits if gather else n) * pieces))


def quantized(matrices: list[VkMatrix]) -> bool:
    """Whether a product by one of these matrices reads its input as int8 chunks (products)."""
    return any(m.type not in FLOATS for m in matrices)


def quantize(up: Uploads, ws: Workspace, x: Any, width: int, matrices: list[VkMatrix]) -> list[Step]:
    """x[:n] as int8 chunks in ws.xq, ws.xd and ws.xs, where one of the matrices that multiply it next is quantized;
    a norm or a gate in front of the products quantizes its output itself instead."""
    if not quantized(matrices):
        return []
    pipeline = kernels.pipeline(up.device, "quantize", WIDTH=width)
    group = bind(up.device, pipeline, x, ws.xq, ws.xd, ws.xs, ws.run)
    return [Step(pipeline, group, lambda n, n_logits: grid(-(-n * width // (32 * 64))))]


def products(up: Uploads, ws: Workspace, x: Any, m: VkMatrix, out: Any, out_width: int, bias: Any = None,
             scale: float = 1.0, accumulate: bool = False, logits: bool = False, out_offset: int = 0,
             also: tuple[tuple[Any, int], ...] = ()) -> list[Step]:
    """out[:n, out_offset:][:, :m.rows] (+)= (x[:n] . m^T + bias) * scale, a step for each of m's parts: x itself for
    a float type, else x's int8 chunks (quantize). also: (buffer, width) for each further weight of a stacked
    matrix (Uploads.matrix), whose rows' outputs go there instead."""
    steps = []
    lanes = lanes_of(m)
    stacked = {}  # where the second and third weights' rows start, and their outputs' widths
    for (_, width), start, start_name, stride_name in zip(also, np.cumsum(m.pieces).tolist(), ("SECOND", "THIRD"),
                                                           ("STRIDE_B", "STRIDE_C")):
        stacked.update({start_name: start, stride_name: width})
    outs = [buffer for buffer, _ in also] + [ws.unused] * (2 - len(also))
    floats = m.type in FLOATS
    row_words = {"ROW_WORDS": m.row_words} if floats else {}  # matmul_q8.wgsl's planes go by chunk instead
    for buffer, first, rows in m.parts:
        constants = dict(K=m.k, ROWS=rows, OUT_STRIDE=out_width, OUT_OFFSET=out_offset, OFFSET=first, SCALE=scale,
                         ACCUMULATE=accumulate, BIAS=bias is not None, LOGITS=logits, **stacked, **row_words)
        pipeline = kernels.pipeline(up.device, "matmul" if floats else "matmul_q8", m.type, LANES=lanes, **constants)
        inputs = (x,) if floats else (ws.xq, ws.xd, ws.xs)
        group = bind(up.device, pipeline, buffer, *inputs, out, bias if bias is not None else ws.none, *outs, ws.run)
        groups = -(-rows // (MATMUL_THREADS // lanes))
        steps.append(Step(pipeline, group, lambda n, n_logits, groups=groups: grid(groups, -(-(n_logits if logits
                                                                                               else n) // TILE))))
    return steps


def embed_steps(up: Uploads, ws: Workspace, m: VkMatrix, scale: float) -> list[Step]:
    """ws.x[:n] = the rows of m (an embedding) that ws.tokens names, times scale: a step for each of m's parts."""
    floats = m.type in FLOATS
    steps = []
    for buffer, first, rows in m.parts:
        constants = dict(K=m.k, ROWS=rows, FIRST=first, SCALE=scale, **({"ROW_WORDS": m.row_words} if floats else {}))
        pipeline = kernels.pipeline(up.device, "embed" if floats else "embed_q8", m.type, **constants)
        group = bind(up.device, pipeline, buffer, ws.tokens, ws.x, ws.run)
        steps.append(Step(pipeline, group, lambda n, n_logits: grid(n)))
    return steps


def lanes_of(m: VkMatrix) -> int:
    """The threads that share a row of m's products (rows.wgsl's LANES): a power of two, at most a row's chunks and
    32, and fewer (down to 8) where m has the rows to keep LANE_THREADS threads busy with fewer: each lane then
    takes more chunks, and a row's lanes meet in a shorter tree."""
    by_rows = max(8, _power_of_two_below(max(1, LANE_THREADS // m.rows)))
    return min(32, _power_of_two_below(m.k // 32), by_rows)


def _power_of_two_below(x: int) -> int:  # the largest power of two at most x (x >= 1)
    return 1 << (x.bit_length() - 1)


def elementwise(up: Uploads, ws: Workspace, name: str, buffers: tuple, width: int, **constants: float) -> Step:
    pipeline = kernels.pipeline(up.device, name, WIDTH=width, **constants)
    return Step(pipeline, bind(up.device, pipeline, *buffers, ws.run), lambda n, n_logits: grid(-(-n * width // 256)))


def gate_step(up: Uploads, ws: Workspace, width: int, gelu: bool, down: VkMatrix) -> Step:
    """ws.gate = act(gate) * up of ws.gu's halves, also as int8 chunks where down is quantized; a thread eight
    values."""
    pipeline = kernels.pipeline(up.device, "gate", WIDTH=width, GELU=gelu, QUANTIZE=quantized([down]))
    group = bind(up.device, pipeline, ws.gu, ws.gate, ws.xq, ws.xd, ws.xs, ws.run)
    return Step(pipeline, group, lambda n, n_logits: grid(-(-n * width // 2048)))


def residual(up: Uploads, ws: Workspace, x: Any, m: VkMatrix, bias: Any, post_norm: Optional[RmsNorm],
             scale: float, d: int) -> list[Step]:
    """ws.x += post_norm(x . m^T + bias) * scale: straight into ws.x without a post-norm (x already quantized where
    m is)."""
    if post_norm is None:
        return products(up, ws, x, m, ws.x, d, bias, scale, accumulate=True)
    return [*products(up, ws, x, m, ws.y, d, bias), norm_step(up, ws, post_norm, ws.y, ws.h, d),
            elementwise(up, ws, "add", (ws.x, ws.h), d, SCALE=scale)]


def _input(up: Uploads, ws: Workspace, norm: Optional[RmsNorm], d: int,
           matrices: list[VkMatrix]) -> tuple[Any, list[Step]]:
    """The block's input, quantized for the matrices that multiply it: ws.h = norm(ws.x), or ws.x itself for a block
    without a norm."""
    if norm is None:
        return ws.x, quantize(up, ws, ws.x, d, matrices)
    return ws.h, [norm_step(up, ws, norm, ws.x, ws.h, d, quantize=quantized(matrices))]


class VkAttention:
    def __init__(self, a: Attention, up: Uploads, ws: Workspace, d: int, residual_scale: float):
        self.block, self.up, self.ws, self.d, self.residual_scale = a, up, ws, d, residual_scale
        self.q_width, self.kv_width = a.n_head * a.head_dim, a.n_head_kv * a.head_dim
        self.o = up.matrix(a.o)
        self.before = self._before()
        # attention quantizes its output itself where its heads are whole chunks
        self.quantize_in_attention = quantized([self.o]) and a.head_dim % 32 == 0
        self.after = ([] if self.quantize_in_attention else quantize(up, ws, ws.att, self.q_width, [self.o])) + \
            residual(up, ws, ws.att, self.o, up.vector(a.o_bias), a.post_norm, residual_scale, d)

    def _before(self) -> list[Step]:
        """The steps up to the ones that read or write the cache: the input, q, k and v, the head norms that come
        before rotary."""
        a, up, ws = self.block, self.up, self.ws
        weights = [(a.q, a.q_bias, ws.qa, self.q_width), (a.k, a.k_bias, ws.ka, self.kv_width),
                   (a.v, a.v_bias, ws.v, self.kv_width)]
        stacks = [[weights[0]]]  # runs of q, k and v that one matrix can hold
        for w in weights[1:]:
            if stackable([s[0] for s in stacks[-1]] + [w[0]]):
                stacks[-1].append(w)
            else:
                stacks.append([w])
        matrices = [up.matrix(*(s[0] for s in stack)) for stack in stacks]
        h, steps = _input(up, ws, a.norm, self.d, matrices)
        for m, stack in zip(matrices, stacks):
            _, biases, buffers, widths = zip(*stack)
            steps += products(up, ws, h, m, buffers[0], widths[0], up.biases(list(biases), m.pieces),
                              also=tuple(zip(buffers[1:], widths[1:])))
        return steps + ([] if a.norms_after_rope else self._head_norms())

    @property
    def qk(self) -> tuple[Any, Any]:
        """The buffers holding the rotated (and normed) queries and keys."""
        return (self.ws.qb, self.ws.kb) if self.block.q_norm is not None else (self.ws.qa, self.ws.ka)

    def _head_norms(self) -> list[Step]:
        a, ws = self.block, self.ws
        if a.q_norm is None:
            return []
        return [norm_step(self.up, ws, a.q_norm, ws.qa, ws.qb, self.q_width),
                norm_step(self.up, ws, a.k_norm, ws.ka, ws.kb, self.kv_width)]

    def _rope(self, q: Any, k: Any, keys: Any, values: Any, store: bool) -> Step:
        """Rotary on q and k in one step, then with store the keys and values into the cache."""
        a, up, ws = self.block, self.up, self.ws
        cos, sin = up.table(a.rope)
        pipeline = kernels.pipeline(up.device, "rope", Q_HEADS=a.n_head, K_HEADS=a.n_head_kv, HEAD_DIM=a.head_dim,
                                    HALF=a.rope.n_dims // 2, NEOX=a.rope.neox, STORE=store)
        group = bind(up.device, pipeline, q, k, cos, sin, ws.positions, ws.v, keys, values, ws.run)
        # workgroup 0 of a row for the keys, then one for each 256 query pairs (rope.wgsl)
        return Step(pipeline, group, lambda n, n_logits: (1 + -(-a.n_head * (a.rope.n_dims // 2) // 256), n, 1))

    def _store(self, keys: Any, values: Any) -> Step:
        ws = self.ws
        pipeline = kernels.pipeline(self.up.device, "store", WIDTH=self.kv_width)
        group = bind(self.up.device, pipeline, self.qk[1], ws.v, keys, values, ws.positions, ws.run)
        return Step(pipeline, group, lambda n, n_logits: (n, 1, 1))

    def _rope_and_store(self, keys: Any, values: Any) -> list[Step]:
        """Rotary, the head norms that come after it, and the keys and values into the cache."""
        a, ws = self.block, self.ws
        if a.rope.n_dims == 0:
            return [self._store(keys, values)]
        if a.norms_after_rope:
            return [self._rope(ws.qa, ws.ka, keys, values, False), *self._head_norms(), self._store(keys, values)]
        return [self._rope(*self.qk, keys, values, True)]

    def steps(self, keys: Any, values: Any) -> list[Step]:
        """The block's steps on a sequence's cache: keys, values [context, kv_width / 2] words of float16 pairs."""
        return [*self.before, *self._rope_and_store(keys, values), *self._attend(keys, values), *self.after]

    def _attend(self, keys: Any, values: Any) -> list[Step]:
        """Attention in splits of each row's positions, then the splits met (splits.wgsl)."""
        a, up, ws = self.block, self.up, self.ws
        shape = dict(HEAD_DIM=a.head_dim, N_HEAD=a.n_head, WINDOW=a.sliding_window or 0, SPLITS=SPLITS)
        attend = kernels.pipeline(up.device, "attention", GROUP=a.n_head // a.n_head_kv, KV_WIDTH=self.kv_width,
                                  SCALE=a.scale, **shape)
        combine = kernels.pipeline(up.device, "combine", QUANTIZE=self.quantize_in_attention, **shape)
        return [Step(attend, bind(up.device, attend, self.qk[0], keys, values, ws.positions, ws.part, ws.stats, ws.run),
                     lambda n, n_logits: (a.n_head, SPLITS, n)),
                Step(combine, bind(up.device, combine, ws.part, ws.stats, ws.positions, ws.att, ws.xq, ws.xd, ws.xs,
                                   ws.run), lambda n, n_logits: (a.n_head, n, 1))]


class VkFeedForward:
    def __init__(self, f: GatedFeedForward, up: Uploads, ws: Workspace, d: int, residual_scale: float):
        width, down = f.gate.shape[0], up.matrix(f.down)
        one = stackable([f.gate, f.up]) and f.up_bias is None
        halves = [up.matrix(f.gate, f.up)] if one else [up.matrix(f.gate), up.matrix(f.up)]
        h, steps = _input(up, ws, f.norm, d, halves)
        for i, m in enumerate(halves):  # ws.gu[:n] = the gate's products, then up's
            steps += products(up, ws, h, m, ws.gu, 2 * width, up.vector(f.up_bias) if i else None,
                              out_offset=i * width)
        steps.append(gate_step(up, ws, width, f.activation == "gelu_tanh", down))
        self._steps = steps + residual(up, ws, ws.gate, down, up.vector(f.down_bias), f.post_norm, residual_scale, d)

    def steps(self) -> list[Step]:
        return self._steps


def ff_width(blocks: list) -> int:
    return max([b.gate.shape[0] for b in blocks if isinstance(b, GatedFeedForward)], default=1)

