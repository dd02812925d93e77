"""Launching the kernels: each function queues one kernel on the current stream and returns at once.

Pointers are CuPy arrays (or NULL); scalars are typed numpy values, as the kernels' C signatures take them.
"""

from __future__ import annotations

import math
from typing import Optional

import cupy
import numpy as np

from kinetic_cuda.module import kernel
from kinetic_cuda.weights import GpuMatrix
from kinetic_cuda.workspace import Activations, Workspace

NULL = np.uint64(0)
WARPS = 4  # rows per matmul thread block, a warp each
TILE = 8  # tokens per matmul thread block (matmul.cu)
THREADS = 256


def _blocks(total: int) -> int:
    return max(1, math.ceil(total / THREADS))


def quantize(acts: Activations, x: cupy.ndarray, n: int) -> None:
    """The first n rows of x ([rows, k] float32) into acts."""
    blocks = n * x.shape[1] // 32
    kernel("quantize_q8")((_blocks(blocks),), (THREADS,), (x, np.int32(blocks), acts.xq, acts.xd, acts.xs))


def matmul(m: GpuMatrix, acts: Activations, x: cupy.ndarray, n: int, out: cupy.ndarray,
           bias: Optional[cupy.ndarray] = None, accumulate: bool = False) -> None:
    """out[:n, :rows] (+)= x[:n] . m^T; a quantized m reads acts, which quantize() made of this x."""
    grid = (math.ceil(m.rows / WARPS), math.ceil(n / TILE))
    head = (m.data, np.int64(m.row_bytes), np.int32(m.rows), np.int32(m.chunks))
    tail = (NULL if bias is None else bias, out, np.int32(n), np.int32(out.shape[1]), np.int32(accumulate))
    inputs = (acts.xq, acts.xd, acts.xs) if m.quantized else (x,)
    m.matmul(grid, (32 * WARPS,), head + inputs + tail)


def embed(m: GpuMatrix, tokens: cupy.ndarray, n: int, out: cupy.ndarray, scale: float) -> None:
    grid = (math.ceil(m.chunks / 64), n)
    m.embed(grid, (64,), (m.data, np.int64(m.row_bytes), tokens, out, np.int32(m.chunks), np.float32(scale)))


def rms_norm(x: cupy.ndarray, n: int, weight: cupy.ndarray, eps: float, out: cupy.ndarray,
             rows: Optional[cupy.ndarray] = None) -> None:
    """out[i] = norm(x[rows[i]] or x[i]) for i < n; x: [*, d] with d = weight's length."""
    args = (x, NULL if rows is None else rows, weight, out, np.int32(weight.size), np.float32(eps))
    kernel("rms_norm")((n,), (THREADS,), args)


def rope(x: cupy.ndarray, positions: cupy.ndarray, n: int, heads: int, head_dim: int, spec,
         factors: Optional[cupy.ndarray]) -> None:
    """In place on x: [n, heads, head_dim] float32; spec: the block's Rope."""
    jobs = n * heads * (spec.n_dims // 2)
    args = (x, positions, np.int32(n), np.int32(heads), np.int32(head_dim), np.int32(spec.n_dims),
            np.float64(spec.base), np.float64(spec.scale), NULL if factors is None else factors, np.int32(spec.neox))
    kernel("rope")((_blocks(jobs),), (THREADS,), args)


def store_kv(k: cupy.ndarray, v: cupy.ndarray, positions: cupy.ndarray, n: int, keys: cupy.ndarray,
             values: cupy.ndarray) -> None:
    width = keys.shape[1]
    kernel("store_kv")((_blocks(n * width),), (THREADS,), (k, v, positions, keys, values, np.int32(n), np.int32(width)))


def attention(ws: Workspace, block, positions: cupy.ndarray, n: int, keys: cupy.ndarray, values: cupy.ndarray) -> None:
    """ws.att[:n] = attention of ws.q[:n] over the cache, both [rows, n_head * head_dim]; block: the Attention."""
    width = block.n_head * block.head_dim
    args = (ws.view(ws.q, width), keys, values, positions, ws.scores, ws.view(ws.att, width),
            np.int32(block.n_head), np.int32(block.n_head_kv), np.int32(block.head_dim),
            np.float32(block.scale), np.int32(block.sliding_window or 0), np.int32(ws.context))
    kernel("attention")((n, block.n_head), (THREADS,), args)


def gate(g: cupy.ndarray, up: cupy.ndarray, n: int, gelu: bool) -> None:
    """g[:n] = act(g[:n]) * up[:n]."""
    total = n * g.shape[1]
    kernel("gate")((_blocks(total),), (THREADS,), (g, up, g, np.int64(total), np.int32(gelu)))


def add(x: cupy.ndarray, y: cupy.ndarray, n: int) -> None:
    total = n * x.shape[1]
    kernel("add")((_blocks(total),), (THREADS,), (x, y, np.int64(total)))
