"""The blocks on the GPU: their weights uploaded, and the kernels a pass queues for each.

Every function here only queues kernels on the current stream: a pass is the same launches whatever the
data, so the one-token decode step can be captured as a CUDA graph and replayed (graph.py).
"""

from __future__ import annotations

from typing import Callable, Optional

import cupy

from kinetic.model.blocks import Attention, GatedFeedForward, RmsNorm, Weight
from kinetic_cuda import ops
from kinetic_cuda.weights import GpuMatrix, vector
from kinetic_cuda.workspace import Workspace

Matrices = Callable[[Weight], GpuMatrix]  # a weight -> its one GpuMatrix (tied weights share it)


class GpuNorm:
    def __init__(self, norm: RmsNorm):
        self.weight, self.eps = vector(norm.weight), norm.eps

    def __call__(self, x: cupy.ndarray, n: int, out: cupy.ndarray, rows: Optional[cupy.ndarray] = None) -> None:
        ops.rms_norm(x, n, self.weight, self.eps, out, rows)


def _optional(norm: Optional[RmsNorm]) -> Optional[GpuNorm]:
    return GpuNorm(norm) if norm is not None else None


def _bias(weight: Optional[Weight]) -> Optional[cupy.ndarray]:
    return vector(weight) if weight is not None else None


def products(ws: Workspace, x: cupy.ndarray, n: int, *jobs: tuple) -> None:
    """out[:n] (+)= x[:n] . m^T for each job (m, out, bias, accumulate); the int8 blocks of x made once."""
    if any(m.quantized for m, *_ in jobs):
        ops.quantize(ws.acts, x, n)
    for m, out, bias, accumulate in jobs:
        ops.matmul(m, ws.acts, x, n, out, bias, accumulate)


def residual(ws: Workspace, m: GpuMatrix, x: cupy.ndarray, n: int, post_norm: Optional[GpuNorm]) -> None:
    """ws.x += post_norm(x . m^T): straight into ws.x when there is no post norm."""
    if post_norm is None:
        products(ws, x, n, (m, ws.x, None, True))
        return
    products(ws, x, n, (m, ws.y, None, False))
    post_norm(ws.y, n, ws.y)
    ops.add(ws.x, ws.y, n)


class GpuAttention:
    def __init__(self, a: Attention, matrix: Matrices):
        self.block = a
        self.norm, self.q_norm, self.k_norm, self.post_norm = (_optional(x) for x in (a.norm, a.q_norm, a.k_norm,
                                                                                       a.post_norm))
        self.q, self.k, self.v, self.o = (matrix(w) for w in (a.q, a.k, a.v, a.o))
        self.q_bias, self.k_bias, self.v_bias = (_bias(w) for w in (a.q_bias, a.k_bias, a.v_bias))
        self.factors = _bias(a.rope.freq_factors)
        self.q_width, self.kv_width = a.n_head * a.head_dim, a.n_head_kv * a.head_dim

    def run(self, ws: Workspace, n: int, keys: cupy.ndarray, values: cupy.ndarray) -> None:
        """ws.x[:n] += this block's output; keys, values: [context, kv_width] float16 bits of its cache."""
        a, positions = self.block, ws.inputs[1]
        self.norm(ws.x, n, ws.h)
        q, k, v = ws.view(ws.q, self.q_width), ws.view(ws.k, self.kv_width), ws.view(ws.v, self.kv_width)
        products(ws, ws.h, n, (self.q, q, self.q_bias, False), (self.k, k, self.k_bias, False),
                 (self.v, v, self.v_bias, False))
        if self.q_norm is not None:
            self.q_norm(q, n * a.n_head, q)
            self.k_norm(k, n * a.n_head_kv, k)
        ops.rope(q, positions, n, a.n_head, a.head_dim, a.rope, self.factors)
        ops.rope(k, positions, n, a.n_head_kv, a.head_dim, a.rope, self.factors)
        ops.store_kv(k, v, positions, n, keys, values)
        ops.attention(ws, a, positions, n, keys, values)
        residual(ws, self.o, ws.view(ws.att, self.q_width), n, self.post_norm)


class GpuFeedForward:
    def __init__(self, f: GatedFeedForward, matrix: Matrices):
        self.norm, self.post_norm = GpuNorm(f.norm), _optional(f.post_norm)
        self.gate, self.up, self.down = (matrix(w) for w in (f.gate, f.up, f.down))
        self.gelu = f.activation == "gelu_tanh"
        self.width = self.gate.rows

    def run(self, ws: Workspace, n: int) -> None:
        self.norm(ws.x, n, ws.h)
        g, u = ws.view(ws.gate, self.width), ws.view(ws.up, self.width)
        products(ws, ws.h, n, (self.gate, g, None, False), (self.up, u, None, False))
        ops.gate(g, u, n, self.gelu)
        residual(ws, self.down, g, n, self.post_norm)
