"""Launching the kernels: each function queues one kernel on the current stream and returns at once.

Pointers are CuPy arrays (or NULL); scalars are typed numpy values, as the kernels' C signatures take them.
"""

from __future__ import annotations

import math
from typing import Optional

import cupy
import numpy as np

from kinetic_cuda.gpu import multiprocessors
from kinetic_cuda.module import kernel
from kinetic_cuda.weights import MMA_ROWS, MMA_THREADS, MMA_TOKENS, TILE, GpuMatrix
from kinetic_cuda.workspace import Activations, ExpertGroups, Workspace

NULL = np.uint64(0)
MV_THREADS = 128  # threads of a matmul.cu matvec thread block, which takes TILE tokens
MV_RESIDENT = 8  # matvec thread blocks a multiprocessor holds at most (by their registers)
SM_SHARED = 228 * 1024  # shared memory of a multiprocessor (compute capability 8.0 to 9.0; less elsewhere)
MMA_FROM = 16  # tokens from which quantized products run on tensor cores
THREADS = 256
MAX_GROUP = 8  # query heads an attention thread block takes at most (attention.cu's attention_G_P, G <= 8)
GROUP_FROM = 16  # rows from which attention thread blocks take several query heads, sharing their keys and values
HEAD_PAIRS = (1, 2, 4)  # pairs of head dims an attention lane holds (attention.cu's P): heads of up to 64, 128, 256
ATTENTION_KERNELS = tuple(f"attention_{g}_{p}" for g in range(1, MAX_GROUP + 1) for p in HEAD_PAIRS)
NORM_THREADS = 1024  # norm_rope.cu's rms_norm, at most
ACTIVATIONS = {"silu": 0, "gelu_tanh": 1, "swiglu_oai": 2}  # elementwise.cu's gate
GATINGS = {"softmax": 0, "sigmoid": 1, "softmax_weight": 2}  # experts.cu's route
ROUTE_ROWS = 4  # experts.cu's route: rows a block routes, a warp each


def _blocks(total: int) -> int:
    return max(1, math.ceil(total / THREADS))


def quantize(acts: Activations, x: cupy.ndarray, n: int) -> None:
    """The first n rows of x ([rows, k] float32) into acts."""
    total = n * x.shape[1]
    kernel("quantize_q8")((_blocks(total),), (THREADS,), (x, np.int64(total), acts.xq, acts.xd, acts.xs))


def _acts(acts: Optional[Activations]) -> tuple:
    return (acts.xq, acts.xd, acts.xs) if acts is not None else (NULL, NULL, NULL)


def _or_null(array: Optional[cupy.ndarray]):
    return NULL if array is None else array


def matmul(jobs: list[tuple], acts: Activations, x: cupy.ndarray, n: int, accumulate: bool = False) -> None:
    """For each job (m, out, bias) of one to three matrices of one type and width: out[:n, :m.rows] (+)= x[:n] . m^T.
    Quantized matrices read acts, which quantize() (or a norm or gate that quantizes) made of x. From MMA_FROM
    tokens on they multiply on int8 tensor cores (mma), else a thread block takes m.per rows (matvec); both
    sum each output in one order (matmul.cu), so a token's output does not depend on n."""
    m = jobs[0][0]
    tensor_cores = m.quantized and n >= MMA_FROM
    per = MMA_ROWS if tensor_cores else m.per
    blocks, args = 0, ()
    for matrix, out, bias in jobs + [(None, NULL, None)] * (3 - len(jobs)):
        rows = matrix.rows if matrix is not None else 0
        blocks += math.ceil(rows / per)
        args += (matrix.data if matrix is not None else NULL, _or_null(bias), out, np.int32(rows))
    args += (np.int64(m.row_bytes), np.int32(m.chunks))
    if tensor_cores:
        args += (acts.xq, acts.xd, acts.xs, np.int32(n), np.int32(accumulate))
        m.mma((blocks, math.ceil(n / MMA_TOKENS)), (MMA_THREADS,), args, shared_mem=m.mma_shared_bytes())
        return
    xs = (acts.xq, acts.xd, acts.xs, NULL) if m.quantized else (NULL, NULL, NULL, x)
    args += (np.int32(per),) + xs + (np.int32(n), np.int32(accumulate))
    shared = m.shared_bytes(n)
    grid = min(blocks, _resident(shared) * multiprocessors())  # each thread block loops over groups of rows
    m.matvec((grid, math.ceil(n / TILE)), (MV_THREADS,), args, shared_mem=shared)


def expert_products(m: GpuMatrix, rows: int, ids: cupy.ndarray, tokens_per: int, pairs: int, acts: Activations,
                    x: cupy.ndarray, out: cupy.ndarray, bias: Optional[cupy.ndarray] = None) -> None:
    """out[p, :rows] = the matrix of expert ids[p] . x[p // tokens_per] (+ row ids[p] of bias [n, rows]) for
    p < pairs, m a stack of experts' matrices of `rows` rows each; a quantized m reads acts, made of x. Each output
    in matmul.cu's one order."""
    xs = (acts.xq, acts.xd, acts.xs, NULL) if m.quantized else (NULL, NULL, NULL, x)
    args = (m.data, np.int64(rows * m.row_bytes), _or_null(bias), ids, np.int32(tokens_per), out, np.int32(rows),
            np.int32(m.per), np.int64(m.row_bytes), np.int32(m.chunks)) + xs
    m.experts((math.ceil(rows / m.per), pairs), (MV_THREADS,), args, shared_mem=m.experts_shared_bytes())


def group_pairs(ids: cupy.ndarray, pairs: int, tokens_per: int, groups: ExpertGroups) -> None:
    """The first pairs of ids (expert or slot ids of (row, rank) pairs, tokens_per a row; negative: left out)
    grouped by expert into groups."""
    args = (ids, np.int32(pairs), np.int32(groups.n_expert), np.int32(tokens_per), groups.order, groups.token_of,
            groups.tiles, np.int32(groups.bound(pairs)))
    kernel("group_pairs")((1,), (1024,), args)


def grouped_expert_products(jobs: list[tuple], rows: int, pairs: int, groups: ExpertGroups, acts: Activations,
                            gather: bool) -> None:
    """For each job (m, out, bias) of one or two quantized stacks of experts' matrices of `rows` rows each, of one
    type (bias: [n, rows] or None): the pairs' products on tensor cores, tile by tile of groups. gather: acts holds
    the rows the pairs belong to and out gets the grouped positions; else acts holds the grouped positions and out
    gets the pairs' own rows. Each output has the bits expert_products gives it."""
    m = jobs[0][0]
    args = ()
    for matrix, out, bias in jobs + [(None, None, None)] * (2 - len(jobs)):
        args += (NULL if matrix is None else matrix.data, _or_null(bias), _or_null(out))
    args += (np.int64(rows * m.row_bytes), np.int32(rows), np.int64(m.row_bytes), np.int32(m.chunks), acts.xq,
             acts.xd, acts.xs, groups.tiles, groups.token_of if gather else NULL, NULL if gather else groups.order)
    grid = (len(jobs) * math.ceil(rows / MMA_ROWS), groups.bound(pairs))
    m.mma_experts(grid, (MMA_THREADS,), args, shared_mem=m.mma_shared_bytes())


def route(logits: cupy.ndarray, n: int, block, bias: Optional[cupy.ndarray], ids: cupy.ndarray,
          weights: cupy.ndarray) -> None:
    """Each of the n rows' experts (kinetic.experts.route) into ids and weights ([n * n_used] each); logits
    ([rows, n_expert], the router's) become the probabilities. block: the Experts."""
    flags = (np.int32(GATINGS[block.gating]), np.int32(block.normalize), np.float32(block.weight_scale))
    args = (logits, np.int32(n), np.int32(block.n_expert), _or_null(bias), np.int32(block.n_used),
            *flags, ids, weights)
    kernel("route")((math.ceil(n / ROUTE_ROWS),), (32 * ROUTE_ROWS,), args)


def combine_experts(y: cupy.ndarray, weights: cupy.ndarray, n: int, n_used: int, out: cupy.ndarray, shared: bool,
                    gates: Optional[cupy.ndarray]) -> None:
    """out[:n] = each row's expert outputs y ([n * n_used, width]) weighted and summed in rank order, plus, where
    shared, out's own values (the shared expert's) times sigmoid(gates[row]) where gates are given."""
    width = out.shape[1]
    total = n * width
    args = (y, weights, np.int32(n_used), np.int32(width), np.int64(total), np.int32(shared),
            _or_null(gates), out)
    kernel("combine_experts")((_blocks(total),), (THREADS,), args)


def _resident(shared: int) -> int:
    """matvec thread blocks that fit on a multiprocessor at once, by their shared memory (1 KiB more each)."""
    return max(1, min(MV_RESIDENT, SM_SHARED // (shared + 1024)))


def embed(m: GpuMatrix, tokens: cupy.ndarray, n: int, out: cupy.ndarray, scale: float) -> None:
    grid = (math.ceil(m.chunks / 64), n)
    m.embed(grid, (64,), (m.data, np.int64(m.row_bytes), tokens, out, np.int32(m.chunks), np.float32(scale)))


def rms_norm(x: cupy.ndarray, n: int, weight: cupy.ndarray, eps: float, out: cupy.ndarray,
             rows: Optional[cupy.ndarray] = None, acts: Optional[Activations] = None) -> None:
    """out[i] = norm(x[rows[i]] or x[i]) for i < n, and into acts too when given; x: [*, d], d = weight's length."""
    d = weight.size
    args = (x, _or_null(rows), weight, out, np.int32(d), np.float32(eps)) + _acts(acts)
    threads = min(NORM_THREADS, max(32, math.ceil(d / 64) * 32))  # d alone sets the sum order, never n
    kernel("rms_norm")((n,), (threads,), args)


def rope_store(q: cupy.ndarray, k: cupy.ndarray, v: cupy.ndarray, positions: cupy.ndarray, n: int, block,
               table: tuple, keys: cupy.ndarray, values: cupy.ndarray, keep: tuple[bool, bool]) -> None:
    """Rotates q: [n, n_head, head_dim] in place, and k: [n, n_head_kv, head_dim] into the cache keys with v into
    values ([context, kv_width] float16 bits each, rows positions[:n]); block: the Attention; table: the (cos, sin)
    of its rotation's angles, [context, n_dims / 2] float64 each. Where keep (keys', values') says so, they stay
    in k (v) instead, rotated, for store_q8 or store_f16."""
    n_dims, width = block.rope.n_dims, block.n_head_kv * block.head_dim
    jobs = n * ((block.n_head + block.n_head_kv) * (n_dims // 2) + block.n_head_kv * (block.head_dim - n_dims) + width)
    args = (q, k, v, positions, np.int32(n), np.int32(block.n_head), np.int32(block.n_head_kv),
            np.int32(block.head_dim), np.int32(n_dims), *table, np.int32(block.rope.neox), keys, values,
            *(np.int32(flag) for flag in keep))
    kernel("rope_store")((_blocks(jobs),), (THREADS,), args)


def store_f16(x: cupy.ndarray, positions: cupy.ndarray, n: int, cache: cupy.ndarray) -> None:
    """Rows x[:n] ([rows, width] float32) into a float16 cache ([context, width]) at rows positions[:n]."""
    width = x.shape[1]
    kernel("store_f16")((_blocks(n * width),), (THREADS,), (x, positions, np.int64(n * width), np.int32(width), cache))


def short_conv(bcu: cupy.ndarray, positions: cupy.ndarray, n: int, kept: cupy.ndarray, weights: cupy.ndarray,
               out: cupy.ndarray) -> None:
    """Rows bcu[:n] ([rows, 3 d]: b, c, u) keep b * u at their positions in kept ([context, d] float32), then
    out[:n] ([rows, d]) = c * their convolution over kept, weights [d * width] (kernels/elementwise.cu)."""
    d = kept.shape[1]
    total = np.int64(n * d)
    kernel("short_conv_keep")((_blocks(n * d),), (THREADS,), (bcu, positions, total, np.int32(d), kept))
    kernel("short_conv")((_blocks(n * d),), (THREADS,), (bcu, positions, total, np.int32(d), kept, weights,
                                                         np.int32(weights.size // d), out))


def store_q8(x: cupy.ndarray, positions: cupy.ndarray, n: int, cache: cupy.ndarray) -> None:
    """Rows x[:n] ([rows, width] float32) into a q8_0 cache ([context * width * 17 / 16] bytes: attention.cu) at
    rows positions[:n]."""
    width = x.shape[1]
    plane = len(cache) // 17 * 16
    kernel("store_q8")((_blocks(n * width),), (THREADS,), (x, positions, np.int64(n * width), np.int32(width), cache,
                                                          np.int64(plane)))


def rotate(x: cupy.ndarray, n: int, order: int) -> None:
    """Each `order` values of the rows x[:n] ([rows, width] float32) times the Walsh-Hadamard matrix of that
    order, in place (contracts.device.cache_rotations)."""
    kernel("hadamard")((n * x.shape[1] // order,), (order,), (x, np.int32(order)))


def attention(ws: Workspace, block, first: int, n: int, keys: cupy.ndarray, values: cupy.ndarray, q8: tuple[bool, bool],
              acts: Optional[Activations] = None, sinks: Optional[cupy.ndarray] = None) -> None:
    """Rows first .. first + n - 1 of the pass: ws.att = attention of ws.q over the cache (its keys and values q8_0
    where q8 says so), both [rows, n_head * head_dim], and into acts too when given (head_dim must then be whole
    blocks of 32); block: the Attention; sinks: its [n_head] sink logits, where it has them."""
    width = block.n_head * block.head_dim
    args = (ws.view(ws.q, width)[first:], keys, values, ws.inputs[1][first:], ws.scores, ws.view(ws.att, width)[first:],
            np.int32(block.n_head), np.int32(block.n_head_kv), np.int32(block.head_dim),
            np.float32(block.scale), np.int32(block.sliding_window or 0), np.int32(ws.context))
    args += _acts(acts.after(first, width) if acts is not None else None)
    args += tuple(np.int32(flag) for flag in q8) + (_or_null(sinks),)
    group = _heads_together(block.n_head // block.n_head_kv) if n >= GROUP_FROM else 1
    pairs = min(p for p in HEAD_PAIRS if 64 * p >= block.head_dim)
    kernel(f"attention_{group}_{pairs}")((n, block.n_head // group), (THREADS,), args)


def _heads_together(per_kv: int) -> int:
    """Query heads of one KV head an attention thread block takes: the most, up to MAX_GROUP, that divide per_kv.
    It changes which blocks read the keys and values, never a bit of the output (attention.cu)."""
    return max(g for g in range(1, MAX_GROUP + 1) if per_kv % g == 0)


def gate(g: cupy.ndarray, up: cupy.ndarray, n: int, activation: str, acts: Optional[Activations]) -> None:
    """g[:n] = act(g[:n]) * up[:n] (swiglu_oai: act(g[:n], up[:n])), and into acts too when given."""
    total = n * g.shape[1]
    args = (g, up, np.int64(total), np.int32(ACTIVATIONS[activation])) + _acts(acts)
    kernel("gate")((_blocks(total),), (THREADS,), args)


def add(x: cupy.ndarray, y: cupy.ndarray, n: int, scale: float = 1.0) -> None:
    """x[:n] += y[:n] * scale."""
    total = n * x.shape[1]
    kernel("add")((_blocks(total),), (THREADS,), (x, y, np.int64(total), np.float32(scale)))


def scale(x: cupy.ndarray, n: int, by: float) -> None:
    """x[:n] *= by."""
    total = n * x.shape[1]
    kernel("scale")((_blocks(total),), (THREADS,), (x, np.int64(total), np.float32(by)))


def conv_silu(x: cupy.ndarray, positions: cupy.ndarray, n: int, kept: cupy.ndarray, weights: cupy.ndarray,
              bias: Optional[cupy.ndarray], out: cupy.ndarray) -> None:
    """Rows x[:n] (a [rows, channels] view, rows strided) keep their values at their positions in kept ([context,
    channels] float32), then out[:n] ([rows, channels]) = silu(their causal convolution over kept (+ bias)), weights
    [channels * width] (kernels/recurrent.cu)."""
    channels = kept.shape[1]
    total = np.int64(n * channels)
    kernel("conv_keep")((_blocks(n * channels),), (THREADS,), (x, np.int64(x.strides[0] // 4), positions, total,
                                                               np.int32(channels), kept))
    kernel("conv_silu")((_blocks(n * channels),), (THREADS,), (positions, total, np.int32(channels), kept, weights,
                                                               np.int32(weights.size // channels),
                                                               _or_null(bias), out))


def ssm_scan(v: cupy.ndarray, dt: cupy.ndarray, n: int, block, vectors: tuple, state_in: cupy.ndarray,
             state_out: cupy.ndarray, y: cupy.ndarray) -> None:
    """Mamba-2's scan of rows v[:n] (u, B, C) and dt[:n] (views with rows strided) from state_in into state_out,
    y[:n] = their outputs; block: the Mamba2; vectors: its dt_bias, a, d on the GPU."""
    n_head, d_state, head_dim = state_in.shape
    args = (v, np.int64(v.strides[0] // 4), dt, np.int64(dt.strides[0] // 4), *vectors, state_in, state_out, y,
            np.int32(n), np.int32(n_head), np.int32(head_dim), np.int32(d_state), np.int32(block.n_group))
    warps = scan_warps(head_dim)
    kernel("ssm_scan")((n_head * head_dim // warps,), (32 * warps,), args)


def delta_net_scan(qk: cupy.ndarray, v: cupy.ndarray, beta: cupy.ndarray, alpha: cupy.ndarray, n: int, block,
                   vectors: tuple, state_in: cupy.ndarray, state_out: cupy.ndarray, o: cupy.ndarray) -> None:
    """Gated DeltaNet's scan of rows qk[:n] ([rows, 2 n_k_head * head_dim]), v, beta and alpha (views with rows
    strided) from state_in into state_out, o[:n] = their outputs; block: the GatedDeltaNet; vectors: its dt_bias
    and a on the GPU."""
    args = (qk, v, np.int64(v.strides[0] // 4), beta, alpha, np.int64(beta.strides[0] // 4), *vectors, state_in,
            state_out, o, np.int32(n), np.int32(block.n_v_head), np.int32(block.head_dim), np.int32(block.n_k_head))
    warps = scan_warps(block.head_dim)
    kernel("delta_net_scan")((block.n_v_head * block.head_dim // warps,), (32 * warps,), args)


def scan_warps(columns: int) -> int:
    """Warps in a recurrent scan's thread block: a warp per column of a head's state, up to 8, all of one head."""
    return math.gcd(columns, 8)


def split_gate(qg: cupy.ndarray, n: int, head_dim: int, q: cupy.ndarray, gate: cupy.ndarray) -> None:
    """Rows qg[:n] (per head its queries then its gate) into q[:n] and gate[:n]."""
    total = n * q.shape[1]
    kernel("split_gate")((_blocks(total),), (THREADS,), (qg, np.int64(total), np.int32(head_dim), q, gate))


def sigmoid_mul(x: cupy.ndarray, g: cupy.ndarray, n: int, acts: Optional[Activations]) -> None:
    """x[:n] *= sigmoid(g[:n]), and into acts too when given."""
    total = n * x.shape[1]
    kernel("sigmoid_mul")((_blocks(total),), (THREADS,), (x, g, np.int64(total)) + _acts(acts))


def mul_rows(x: cupy.ndarray, w: cupy.ndarray, n: int) -> None:
    """Each row of x[:n] times w, element by element."""
    total = n * x.shape[1]
    kernel("mul_rows")((_blocks(total),), (THREADS,), (x, w, np.int64(total), np.int32(w.size)))


def silu_gate_rows(x: cupy.ndarray, z: cupy.ndarray, n: int) -> None:
    """x[:n] = silu(z[:n]) * x[:n]; z a view with rows strided."""
    total = n * x.shape[1]
    kernel("silu_gate_rows")((_blocks(total),), (THREADS,), (x, z, np.int64(z.strides[0] // 4), np.int64(total),
                                                            np.int32(x.shape[1])))
