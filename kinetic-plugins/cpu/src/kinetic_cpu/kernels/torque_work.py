"""The work of Torque's phases (torque.py). Each runs the unfused pass's own kernels on the same values in the
same order, so each output is bit for bit what the unfused pass gives: products driver.rows (by address, as
driver.run calls it; then the bias, as numpy adds it), attention ops._attend_group, gates ops._gate_chunk,
norms ops.rms_norm_into, rotations ops.rope, short convolutions short_conv.convolve_row, activations
activations._rows_serial, the cache's float16 bits as ops.half_bits_of gives them, and the residual sum as the
runner adds it.

Every array here is x (the rows' residual stream, [n, n_embd] float32) or a view of the room (torque_plan.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from kinetic_cpu import ops
from kinetic_cpu.kernels.activations import Q8_0, Q8_K, f16_round
from kinetic_cpu.kernels.attention import KEY_BLOCK
from kinetic_cpu.kernels.driver import PAD, ROWS
from kinetic_cpu.kernels.intrinsics import blocks_at, call_at, half_bits, pointer_at
from kinetic_cpu.kernels.shares import ANY
from kinetic_cpu.kernels.short_conv import convolve_row
from kinetic_cpu.kernels.torque_plan import (ACC, ACTS, ADDRESS, AFTER_ROPE, ATTENDED, ATTENTION, BIAS, CONV, CONVOLVED,
                                             CONV_WIDTH, DELTA_NET, D_INNER, FIRST, H, HALF_QUERIES, HEADS, KIND,
                                             K_NORM, LAYER, M1, M2, M3, M4, M5, MAMBA2, NEOX, NORM, NORMED, N_HEAD,
                                             N_KV, N_ROWS, ONES, OUTS, POST_NORM, QUANTIZE, QUERIES, Q_NORM, RESIDUAL,
                                             ROPE, ROWS_AT, SCORES, SECOND, SHARED, SHARED_IN, SHORT_CONV, SINKS, SIZE,
                                             STEPS, SUMMED, SUMS, SUMS_TO, SUM_FIRST, SUM_NEXT, VISIBLE,
                                             floats, q8_0_acts, q8_k_acts, scratch)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@numba.njit(**_JIT)
def serial(plan, step, x, room, b, stage):
    """Block b's one-thread work at stage NORMED, QUERIES, CONVOLVED, SECOND or OUTPUT (torque_plan.py; a
    recurrent block's other stages: torque_recurrent.serial)."""
    block, n = plan.blocks[b], x.shape[0]
    if stage == NORMED:
        h = _input(plan, x, room, b, FIRST)
        if block[NORM] >= 0:
            _norm_pieces(plan, block[NORM], x, h)
        _quantize(plan, h, room, _matrices(block, FIRST))
    elif stage == QUERIES:
        q_rows, k_rows = plan.matrices[block[M1], N_ROWS], plan.matrices[block[M2], N_ROWS]
        outs = floats(room, OUTS, 1, n * (q_rows + 2 * k_rows))[0]
        q = outs[: n * q_rows].reshape((n, q_rows))
        k = outs[n * q_rows : n * (q_rows + k_rows)].reshape((n, k_rows))
        v = outs[n * (q_rows + k_rows) :].reshape((n, k_rows))
        queries = numba.carray(pointer_at(room[HALF_QUERIES]), n * q_rows, np.float64)
        _queries_and_cache(plan, step, block, q, k, v, queries)
    elif stage == CONVOLVED:
        d = plan.matrices[block[M2], N_ROWS] // 3
        _convolved(plan, step, block, floats(room, OUTS, n, 3 * d), floats(room, H, n, d))
    elif stage == SECOND:
        _quantize(plan, _input(plan, x, room, b, SECOND), room, _matrices(block, SECOND))
    else:
        _add_output(plan, block, x, floats(room, OUTS, n, x.shape[1]), floats(room, SUMMED, n, x.shape[1]))


@numba.njit(**_JIT)
def products(plan, x, room, b, stage, workers):
    """Block b's products at stage FIRST (q, k, v; gate, up) or SECOND's (o; down) as jobs of ROWS rows of a
    matrix, as driver.run cuts them, their outputs one after another in the room's OUTS."""
    which, n = _matrices(plan.blocks[b], stage), x.shape[0]
    given = _input(plan, x, room, b, stage)
    total = 0
    for m in which:
        total += plan.matrices[m, N_ROWS]
    acc = numba.carray(pointer_at(room[ACC]), (workers, n + PAD, 8), np.float32)
    return _Products(plan.matrices, plan.floats, which, floats(room, OUTS, 1, n * total)[0],
                     q8_0_acts(room, n, given.shape[1]), q8_k_acts(room, n, given.shape[1]), given, acc)


@numba.njit(**_JIT)
def product_jobs(plan, which):
    """The jobs of the products of the matrices `which`: ROWS rows of one each."""
    count = 0
    for m in which:
        count += (plan.matrices[m, N_ROWS] + ROWS - 1) // ROWS
    return count


@numba.njit(**_JIT)
def attention_jobs(plan, step, room, b, n, workers):
    """Attention block b's jobs, a row and a KV head each, for ops._attend_group (ANY in its token's place)."""
    block, hd, count = plan.blocks[b], plan.head_dim, plan.heads_count
    n_head, n_kv, layer, visible = block[N_HEAD], block[N_KV], block[LAYER], block[VISIBLE]
    at = step.addresses[layer, step.cache_of_row[0]]  # the caches' shape and type: every row's are alike
    keys = numba.carray(pointer_at(at[0]), (n_kv, plan.key_blocks, hd, KEY_BLOCK), np.uint16)
    values = numba.carray(pointer_at(at[1]), (plan.context, n_kv, hd), np.uint16)
    queries = numba.carray(pointer_at(room[HALF_QUERIES]), (n, n_head, hd), np.float64)
    sinks = plan.floats[block[SINKS] : block[SINKS] + n_head].astype(np.float64) if block[SINKS] >= 0 else np.empty(0)
    return ops._HeadGroups(queries, keys, values, step.addresses[layer], step.cache_of_row, step.firsts[visible],
                           step.lasts[visible], plan.scales[b], floats(room, ATTENDED, n, n_head * hd),
                           scratch(room, HEADS, workers, count, hd),
                           scratch(room, SCORES, workers, count, step.lasts.max() + 1),
                           scratch(room, SUMS, workers, count, hd), sinks, ANY)


@numba.njit(**_JIT)
def gate_jobs(plan, x, room, b):
    """Feed-forward block b's jobs for ops._gate_chunk (ANY in its token's place): act(gate) * up, or act(up) * 1
    without a gate, into what its down product reads (_input)."""
    block, n = plan.blocks[b], x.shape[0]
    ff = plan.matrices[block[M2], N_ROWS]
    outs = floats(room, OUTS, 1, 2 * n * ff)[0]
    g = outs[: n * ff].reshape((n, ff))
    u = outs[n * ff :].reshape((n, ff)) if block[M1] >= 0 else floats(room, ONES, n, ff)
    return ops._GateChunks(g, u, ANY, _input(plan, x, room, b, SECOND))


@numba.njit(**_JIT)
def gate_chunks(plan, b):
    """The gate jobs of a row of feed-forward block b."""
    return (plan.matrices[plan.blocks[b, M2], N_ROWS] + ops.GATE_CHUNK - 1) // ops.GATE_CHUNK


@numba.njit(**_JIT, inline="always")
def _matrices(block, stage):
    """The matrices of block's products at stage FIRST (q, k, v; gate and up, or up) or SECOND (o; down)."""
    if block[KIND] == ATTENTION:
        return block[M1:M4] if stage == FIRST else block[M4 : M4 + 1]
    if block[KIND] == DELTA_NET:
        return block[M1 : M4 + 1] if stage == FIRST else block[M5 : M5 + 1]
    if stage == FIRST:
        return block[M1:M3] if block[M1] >= 0 else block[M2:M3]
    return block[M3 : M3 + 1]


@numba.njit(**_JIT, inline="always")
def _input(plan, x, room, b, stage):
    """What block b's products at stage FIRST read (x itself, or x normed into H), or at SECOND: attention's output
    (ATTENDED), or act(gate) * up or c * conv(b * u) (in H, as the first products' activations are made by then)."""
    block, n = plan.blocks[b], x.shape[0]
    if stage == FIRST:
        if block[SHARED] == 1:
            return floats(room, SHARED_IN, n, x.shape[1])
        return x if block[NORM] < 0 else floats(room, H, n, x.shape[1])
    if block[KIND] == ATTENTION:
        return floats(room, ATTENDED, n, block[N_HEAD] * plan.head_dim)
    if block[KIND] == MAMBA2 or block[KIND] == DELTA_NET:
        return floats(room, H, n, block[D_INNER])
    return floats(room, H, n, plan.matrices[block[M2], N_ROWS] // (3 if block[KIND] == SHORT_CONV else 1))


@numba.njit(**_JIT, inline="always")
def _norm_pieces(plan, norm, x, out):  # x, out: float32, C-contiguous, the same size (out may be x)
    """RMS norm `norm` over pieces of its width (a head, or the whole row), as the runner's _norm."""
    at, width = plan.norms[norm, 0], plan.norms[norm, 1]
    ops.rms_norm_into(x.reshape((-1, width)), plan.floats[at : at + width], plan.eps[norm],
                      out.reshape((-1, width)))


@numba.njit(**_JIT)
def _quantize(plan, x, room, which):  # x: [n, k] float32
    """x as the activations the matrices `which` take, into the room (activations._rows_serial by address)."""
    kinds = np.zeros(3, np.bool_)
    for m in which:
        kinds[plan.matrices[m, ACTS]] = True
    n, k = x.shape
    if kinds[Q8_0]:
        q, d, sums = q8_0_acts(room, n, k)
        call_at(plan.code[QUANTIZE], (np.int64(Q8_0), x, q, d, sums))
    if kinds[Q8_K]:
        q, d, sums = q8_k_acts(room, n, k)
        _zero(q.reshape(-1))  # Q8_K rows start zeroed (activations.quantize_q8_k)
        _zero(d.reshape(-1))
        _zero(sums.reshape(-1))
        call_at(plan.code[QUANTIZE], (np.int64(Q8_K), x, q, d, sums))


@numba.njit(**_JIT, inline="always")
def _zero(values):  # values: 1-d
    for i in range(values.size):  # a loop: numba compiles slice assignment slowly
        values[i] = 0


@numba.njit(**_JIT)
def _product_chunk(jobs, job, worker):
    """ROWS rows of one matrix, by rows compiled for its type (call_at), then its bias."""
    matrices, n = jobs.matrices, jobs.x.shape[0]
    i, first, at = 0, 0, 0
    m = jobs.which[0]
    while job >= first + (matrices[m, N_ROWS] + ROWS - 1) // ROWS:
        first += (matrices[m, N_ROWS] + ROWS - 1) // ROWS
        at += n * matrices[m, N_ROWS]
        i += 1
        m = jobs.which[i]
    rows = matrices[m, N_ROWS]
    r0 = (job - first) * ROWS
    r1 = min(rows, r0 + ROWS)
    w = blocks_at(matrices[m, ADDRESS], rows, matrices[m, STEPS], matrices[m, SIZE])
    out, acc = jobs.outs[at : at + n * rows].reshape((n, rows)), jobs.acc[worker]
    if matrices[m, ACTS] == Q8_0:
        call_at(matrices[m, ROWS_AT], (w, r0, r1, jobs.q8_0, acc, out))
    elif matrices[m, ACTS] == Q8_K:
        call_at(matrices[m, ROWS_AT], (w, r0, r1, jobs.q8_k, acc, out))
    else:
        call_at(matrices[m, ROWS_AT], (w, r0, r1, (jobs.x,), acc, out))
    bias = matrices[m, BIAS]
    if bias >= 0:
        for t in range(n):
            for r in range(r0, r1):
                out[t, r] += jobs.floats[bias + r]


class _Products(NamedTuple):
    """products' jobs (kernels/shares.py): what _product_chunk reads and writes."""

    matrices: np.ndarray
    floats: np.ndarray
    which: np.ndarray  # the matrices, by their rows in matrices
    outs: np.ndarray  # their outputs, [n, rows] each, one after another
    q8_0: tuple  # the input as Q8_0 activations
    q8_k: tuple  # as Q8_K activations
    x: np.ndarray  # [n, k] float32: the input itself, as the float types take it
    acc: np.ndarray  # [workers, n + PAD, 8] float32
    run_job = _product_chunk


@numba.njit(**_JIT)
def _queries_and_cache(plan, step, block, q, k, v, queries):  # q: [n, n_head * hd]; k, v: [n, n_kv * hd]
    """q and k normed and rotated (in place), q at float16 precision into queries (float64), and each row's k
    and v into its sequence's caches as float16 bits, as the runner's _attention and ops.store do."""
    n, n_head, n_kv, hd = q.shape[0], block[N_HEAD], block[N_KV], plan.head_dim
    cos, sin, neox = step.cos[block[ROPE]], step.sin[block[ROPE]], block[NEOX] == 1
    if block[AFTER_ROPE] == 0:
        _head_norms(plan, block, q, k)
    ops.rope(q.reshape((n, n_head, hd)), cos, sin, neox)
    ops.rope(k.reshape((n, n_kv, hd)), cos, sin, neox)
    if block[AFTER_ROPE] == 1:
        _head_norms(plan, block, q, k)
    flat = q.reshape(-1)
    for j in range(flat.size):
        queries[j] = np.float64(f16_round(flat[j]))
    for i in range(n):
        at = step.addresses[block[LAYER], step.cache_of_row[i]]
        keys = numba.carray(pointer_at(at[0]), (n_kv, plan.key_blocks, hd, KEY_BLOCK), np.uint16)
        values = numba.carray(pointer_at(at[1]), (plan.context, n_kv, hd), np.uint16)
        p = step.positions[i]
        for h in range(n_kv):
            for j in range(hd):
                keys[h, p // KEY_BLOCK, j, p % KEY_BLOCK] = half_bits(f16_round(k[i, h * hd + j]))
                values[p, h, j] = half_bits(f16_round(v[i, h * hd + j]))


@numba.njit(**_JIT)
def _convolved(plan, step, block, bcu, out):  # bcu: [n, 3 d] in_proj's b, c, u; out: [n, d] float32
    """Each row's b * u kept at its position in its sequence's rows, then out = c * conv(b * u), as the runner's
    _short_conv and _convolve do: every row kept before any is convolved."""
    n, d, width = out.shape[0], out.shape[1], block[CONV_WIDTH]
    taps = plan.floats[block[CONV] : block[CONV] + width * d].reshape((width, d))
    for i in range(n):
        kept = _kept_rows(plan, step, block, i, d)
        for c in range(d):
            kept[step.positions[i], c] = bcu[i, c] * bcu[i, 2 * d + c]
    for i in range(n):
        convolve_row(_kept_rows(plan, step, block, i, d), step.positions[i], taps, out[i])
        for c in range(d):
            out[i, c] = bcu[i, d + c] * out[i, c]


@numba.njit(**_JIT, inline="always")
def _kept_rows(plan, step, block, i, d):
    """Row i's sequence's kept rows of short convolution block (cache.conv_rows): [context, d] float32."""
    return numba.carray(pointer_at(step.conv_rows[block[LAYER], step.cache_of_row[i]]), (plan.context, d), np.float32)


@numba.njit(**_JIT, inline="always")
def _head_norms(plan, block, q, k):
    """q_norm and k_norm, where the block has them, on q and k in place."""
    if block[Q_NORM] >= 0:
        _norm_pieces(plan, block[Q_NORM], q, q)
    if block[K_NORM] >= 0:
        _norm_pieces(plan, block[K_NORM], k, k)


@numba.njit(**_JIT)
def _add_output(plan, block, x, y, summed):  # x, y, summed: [n, n_embd] float32
    """x += post_norm(y) (times the residual scale unless it is 1), y normed in place; in a Parallel block, y
    summed with the mixers' before it (SUMS_TO), as the runner's _block sums them, the sum added at the last."""
    if block[POST_NORM] >= 0:
        _norm_pieces(plan, block[POST_NORM], y, y)
    scale, sums_to = np.float32(plan.residual_scale), block[SUMS_TO]
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            if sums_to == SUM_FIRST:
                summed[i, j] = y[i, j]
            elif sums_to == SUM_NEXT:
                summed[i, j] = summed[i, j] + y[i, j]
            else:
                out = y[i, j] if sums_to == RESIDUAL else summed[i, j] + y[i, j]
                x[i, j] = x[i, j] + (out if scale == 1 else out * scale)
