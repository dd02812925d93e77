"""The CPU device's non-matrix kernels: norms, rotary embeddings, attention, gates.

Each output element is computed by one fixed sequence of operations whatever the batch size, thread
count or row position (docs/exactness.md, sections 1 and 2): numba without fastmath keeps every sum in loop order.
Rotations run on one thread: they are cheap, and starting threads costs more; norms, gates and attention split
over threads once they are large enough.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np

from kinetic_cpu.kernels import attention, gates
from kinetic_cpu.kernels.activations import f16_round
from kinetic_cpu.kernels.intrinsics import compiled_address, half_bits, pointer_at
from kinetic_cpu.kernels.shares import ANY, addressed_code, run_addressed, stashed_code

_JIT = dict(cache=True, nogil=True, error_model="numpy")  # a division by zero gives inf or NaN, unchecked: loops vectorize


@numba.njit(**_JIT)
def to_half(x):  # x: C-contiguous float32, any shape
    """x rounded to float16 (to nearest, ties to even), kept as float32; numpy's float16 cast rounds the
    same, several times slower."""
    out = np.empty_like(x)
    flat, rounded = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        rounded[i] = f16_round(flat[i])
    return out


@numba.njit(**_JIT)
def half_bits_of(x):  # x: C-contiguous float32, any shape -> uint16, the same shape
    """x rounded to float16 as to_half rounds it, as float16 bits: what an f16 KV cache keeps."""
    out = np.empty(x.shape, np.uint16)
    flat, bits = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        bits[i] = half_bits(f16_round(flat[i]))
    return out


@numba.njit(**_JIT)
def rotated(x, n):  # x: [rows, d] float32, d a multiple of n, a power of 2 -> [rows, d] float32
    """Each n values of a row times the orthonormal Walsh-Hadamard matrix of order n (Sylvester's, over sqrt(n)),
    which is its own inverse: butterflies in float64 in one fixed order, then one rounding to float32."""
    out = np.empty_like(x)
    chunk = np.empty(n)
    scale = 1.0 / math.sqrt(n)
    for i in range(x.shape[0]):
        for start in range(0, x.shape[1], n):
            for j in range(n):
                chunk[j] = x[i, start + j]
            half = 1
            while half < n:
                for base in range(0, n, 2 * half):
                    for j in range(base, base + half):
                        a, b = chunk[j], chunk[j + half]
                        chunk[j], chunk[j + half] = a + b, a - b
                half *= 2
            for j in range(n):
                out[i, start + j] = np.float32(chunk[j] * scale)
    return out


def rms_norm(x, weight, eps):  # x: [n, d] float32, weight: [d] float32 -> [n, d] float32
    """x / sqrt(mean(x^2) + eps) * weight, each row on its own (rms_norm_into), a prompt's rows shared among the
    threads (kernels/shares.py)."""
    x, weight = (np.ascontiguousarray(a, np.float32) for a in (x, weight))  # as norm_code compiles for
    out = np.empty_like(x)
    _norm_jobs(*norm_code(), x, weight, float(eps), out, 1 if x.size < SERIAL_NORMS else numba.get_num_threads())
    return out


@functools.lru_cache(maxsize=None)
def norm_code() -> tuple[int, int]:
    """_norm_jobs' address and code (shares.run_addressed): one compiled parallel loop for every kind of job
    (a norm's own took 0.7 s of a first load)."""
    rows = np.zeros((1, 1), np.float32)
    return addressed_code(_norm_row, _NormRows(rows, np.zeros(1, np.float32), 0.0, rows))


@numba.njit(**_JIT)
def _norm_jobs(address, code, x, weight, eps, out, threads):
    """rms_norm's jobs, a row each, on up to `threads` threads, each by _norm_row at `address` (norm_code)."""
    run_addressed(code, address, _NormRows(x, weight, eps, out), x.shape[0], max(1, min(threads, x.shape[0])))


@numba.njit(**_JIT)
def _norm_row(jobs, job, worker):
    """Row `job` of out."""
    rms_norm_into(jobs.x[job : job + 1], jobs.weight, jobs.eps, jobs.out[job : job + 1])


@numba.njit(**_JIT)
def rms_norm_into(x, weight, eps, out):  # x, out: [n, d] float32 (out may be x); weight: [d] float32
    """rms_norm(x, weight, eps) into out."""
    n, d = x.shape
    for i in range(n):
        total = 0.0
        for j in range(d):
            total += np.float64(x[i, j]) * np.float64(x[i, j])
        scale = np.float32(1.0 / math.sqrt(total / d + eps))
        for j in range(d):
            out[i, j] = x[i, j] * scale * weight[j]


@numba.njit(**_JIT)
def layer_norm(x, weight, bias, eps):  # x: [n, d] float32, weight and bias: [d] float32 -> [n, d] float32
    """(x - mean(x)) / sqrt(var(x) + eps) * weight + bias, each row on its own, mean and variance in float64."""
    n, d = x.shape
    out = np.empty_like(x)
    for i in range(n):
        total = 0.0
        for j in range(d):
            total += np.float64(x[i, j])
        mean = total / d
        squares = 0.0
        for j in range(d):
            centered = np.float64(x[i, j]) - mean
            squares += centered * centered
        scale = 1.0 / math.sqrt(squares / d + eps)
        for j in range(d):
            out[i, j] = np.float32((np.float64(x[i, j]) - mean) * scale) * weight[j] + bias[j]
    return out


@numba.njit(**_JIT)
def rope_angles(positions, n_dims, base, scales, factors, magnitude):
    """cos and sin of position * scale_k * base^(-2k/n_dims) / factor_k (Su et al., 2021), times magnitude, for
    every row and pair k (kinetic.rotary gives scales and magnitude)."""
    # positions: [n] int64; scales, factors: [n_dims/2] -> ([n, n_dims/2] float64,) * 2
    half = n_dims // 2
    powers = np.empty(half)
    for k in range(half):
        powers[k] = base ** (-2.0 * k / n_dims)
    cos, sin = np.empty((positions.size, half)), np.empty((positions.size, half))
    for i in range(positions.size):
        for k in range(half):
            theta = positions[i] * scales[k] * powers[k] / factors[k]
            cos[i, k], sin[i, k] = math.cos(theta) * magnitude, math.sin(theta) * magnitude
    return cos, sin


@numba.njit(**_JIT)
def rope(x, cos, sin, neox):  # x: [n, heads, head_dim] float32, in place; cos, sin: [n, n_dims/2] float64
    """Rotate pairs of the first n_dims of each head by rope_angles: adjacent pairs (2k, 2k+1), or with neox
    the pairs (k, k + n_dims/2)."""
    n, heads, _ = x.shape
    half = cos.shape[1]
    for i in range(n):
        for k in range(half):
            c, s = cos[i, k], sin[i, k]
            a, b = (k, k + half) if neox else (2 * k, 2 * k + 1)
            for h in range(heads):
                x0, x1 = np.float64(x[i, h, a]), np.float64(x[i, h, b])
                x[i, h, a] = np.float32(x0 * c - x1 * s)
                x[i, h, b] = np.float32(x0 * s + x1 * c)


SERIAL_TERMS = 1 << 18  # below this many score terms (scores times head size) one thread beats two
SERIAL_GATES = 1 << 14  # below this many gate outputs likewise (a one-token pass stays on one thread)
SERIAL_NORMS = 1 << 14  # and below this many values a norm
GATE_CHUNK = 1024  # gate outputs per parallel job


def attend(q, keys, values, addresses, cache_of_row, firsts, lasts, scale, sinks=None):
    """Grouped-query attention of each row i over positions [firsts[i], lasts[i]] (kinetic.visibility) of the
    cache at addresses[cache_of_row[i]]: one call for every sequence of a pass, on numba's threads when large
    enough.

    q: [n, n_head, hd] float32 holding float16 values; keys [n_head_kv, blocks, width, KEY_BLOCK]
    (kernels/attention.py: a block's positions side by side, dimension by dimension) and values [ctx,
    n_head_kv, width]: a cache of the shape and type of every cache read, each float16 bits (uint16, width
    hd) or int8 holding q8_0 blocks (width hd / 32 * 34, cache.py), C-contiguous; addresses: [caches, 2]
    int64, where each cache's keys and values are (kept alive by the caller); cache_of_row, firsts, lasts:
    [n] int64; sinks: [n_head] float32 logits that join each head's softmax sum (gpt-oss), or None.
    -> [n, n_head * hd] float32. Each score sums over the head dimension in order, softmax and the weighted
    sum go in position order, all in float64, whatever the thread count or the other rows
    (kernels/attention.py). A job is one row and one KV head with its query heads, so each key and value is
    read once for them.
    """
    q = q.astype(np.float64)  # exact: the kernels take q in float64
    n, n_head, hd = q.shape
    out = np.empty((n, n_head * hd), dtype=np.float32)
    span = int(lasts.max()) + 1
    workers = 1 if n * n_head * span * hd < SERIAL_TERMS else min(numba.get_num_threads(), n * keys.shape[0])
    group = n_head // keys.shape[0]  # query heads per KV head: a job takes them together
    width = heads_per_call(group)
    heads = np.zeros((workers, width, hd))
    scores, sums = np.empty((workers, width, span)), np.empty((workers, width, hd))
    sinks = np.empty(0) if sinks is None else sinks.astype(np.float64)
    rows = (np.ascontiguousarray(a, np.int64) for a in (addresses, cache_of_row, firsts, lasts))  # as compiled
    _attend_jobs(*attend_code(keys.dtype, values.dtype, width), q, keys, values, *rows, scale, out, heads, scores,
                 sums, sinks)
    return out


@functools.lru_cache(maxsize=None)
def attend_address(key_type: np.dtype, value_type: np.dtype, count: int) -> int:
    """The address of _attend_group compiled for attention jobs over caches of these element types, `count`
    query heads a kernel call (attention.heads), for jobs holding ANY in its token's place (shares.Addressed):
    the arrays' types as attend and Torque's pass (kernels/torque_work.py) give them, their sizes aside."""
    return compiled_address(_attend_group, (_attend_sample(key_type, value_type, count), 0, 0))


def _attend_sample(key_type: np.dtype, value_type: np.dtype, count: int) -> "_HeadGroups":
    zeros, f64, i64 = np.zeros, np.float64, np.int64
    return _HeadGroups(zeros((1, 1, 1)), zeros((1, 1, 1, attention.KEY_BLOCK), key_type), zeros((1, 1, 1), value_type),
                       zeros((1, 2), i64), zeros(1, i64), zeros(1, i64), zeros(1, i64), 1.0, zeros((1, 1), np.float32),
                       zeros((1, count, 1)), zeros((1, count, 1)), zeros((1, count, 1)), zeros(0, f64),
                       attention.heads(count))


@functools.lru_cache(maxsize=None)
def attend_code(key_type: np.dtype, value_type: np.dtype, count: int) -> tuple[int, int]:
    """_attend_jobs' address and code (shares.run_addressed) for these caches and heads a call."""
    address, jobs = attend_address(key_type, value_type, count), _attend_sample(key_type, value_type, count)
    return address, stashed_code(address, jobs._replace(width=ANY))


@numba.njit(**_JIT)
def store(keys, values, addresses, cache_of_row, positions, k, v):
    """Row i's keys k[i] and values v[i] ([n, n_kv, width], as the caches keep them: cache.stored) into the
    cache at addresses[cache_of_row[i]] (ops.attend's caches, of the shape and type of keys and values), at
    position positions[i]: its keys in column p % KEY_BLOCK of block p // KEY_BLOCK, its values in row p."""
    for i in range(k.shape[0]):
        k_cache = numba.carray(pointer_at(addresses[cache_of_row[i], 0]), keys.shape, keys.dtype)
        v_cache = numba.carray(pointer_at(addresses[cache_of_row[i], 1]), values.shape, values.dtype)
        p = positions[i]
        for h in range(k.shape[1]):
            for j in range(k.shape[2]):
                k_cache[h, p // attention.KEY_BLOCK, j, p % attention.KEY_BLOCK] = k[i, h, j]
                v_cache[p, h, j] = v[i, h, j]


def cache_addresses(caches) -> np.ndarray:
    """[caches, 2] int64: where each cache's keys and values (C-contiguous arrays) are, as attend takes them."""
    return np.array([[keys.ctypes.data, values.ctypes.data] for keys, values in caches], np.int64)


def heads_per_call(group: int) -> int:
    """The count of heads a kernel call runs for a KV head's `group` query heads (attention.HEAD_COUNTS): the
    power of two at or above, at most IN_FLIGHT. The padding heads' query rows are zeros, and what they give
    is never read."""
    return min(attention.IN_FLIGHT, 1 << (group - 1).bit_length())


@numba.njit(**_JIT)
def _attend_jobs(address, code, q, keys, values, addresses, cache_of_row, firsts, lasts, scale, out, heads, scores,
                 sums, sinks):
    """attend's jobs (kernels/shares.py), one row and one KV head with its query heads each, on as many
    threads as the scratch has rows for, each by _attend_group at `address` (attend_code)."""
    jobs = _HeadGroups(q, keys, values, addresses, cache_of_row, firsts, lasts, scale, out, heads, scores, sums,
                       sinks, ANY)
    run_addressed(code, address, jobs, q.shape[0] * keys.shape[0], heads.shape[0])


@numba.njit(**_JIT)
def _attend_group(jobs, job, worker):
    """Row i = job // n_kv, the G query heads of KV head kv = job % n_kv, a kernel call taking the scratch's
    width of them (the last call padded with zero heads), with the worker's scratch, over row i's cache."""
    q, keys, values, addresses, cache_of_row, firsts, lasts, scale, out, workers_q, workers_scores, workers_sums, \
        sinks, width_token = jobs
    heads, scores, sums = workers_q[worker], workers_scores[worker], workers_sums[worker]
    n_kv, hd, width = keys.shape[0], q.shape[2], heads.shape[0]
    group = q.shape[1] // n_kv
    i, kv = job // n_kv, job % n_kv
    k_cache = numba.carray(pointer_at(addresses[cache_of_row[i], 0]), keys.shape, keys.dtype)
    v_cache = numba.carray(pointer_at(addresses[cache_of_row[i], 1]), values.shape, values.dtype)
    first, last = firsts[i], lasts[i]
    n = last - first + 1
    totals, sunk = np.empty(width), np.empty(width)
    for g0 in range(0, group, width):
        count = min(width, group - g0)
        for g in range(width):
            for j in range(hd):
                heads[g, j] = q[i, kv * group + g0 + g, j] if g < count else 0.0
        attention.scores(heads, k_cache[kv], first, n, scores, width_token)
        for g in range(count):  # a head's sink joins its sum as e^(sink - peak), softmax's peak
            sunk[g] = np.exp(sinks[kv * group + g0 + g] - scale * _peak(scores[g], n)) if sinks.shape[0] else 0.0
        attention.softmax(scores, n, scale, totals, width_token)
        for g in range(count):
            totals[g] += sunk[g]
        attention.weighted(scores, n, v_cache[first:, kv], sums, width_token)
        for g in range(count):
            h = kv * group + g0 + g
            for j in range(hd):
                out[i, h * hd + j] = np.float32(sums[g, j] / totals[g])


@numba.njit(**_JIT)
def _peak(x, n):  # x: [>= n] float64, n >= 1
    """max(x[:n]) by a loop: numba's np.max took half a second longer to compile (the same value: scores are finite)."""
    peak = x[0]
    for j in range(1, n):
        if x[j] > peak:
            peak = x[j]
    return peak


class _HeadGroups(NamedTuple):
    """attend's jobs: what _attend_group reads and writes."""

    q: np.ndarray
    keys: np.ndarray  # the first cache's keys and values: the shape and type of every cache's
    values: np.ndarray
    addresses: np.ndarray  # [caches, 2] int64: each cache's keys' and values' data
    cache_of_row: np.ndarray  # [n] int64: the cache each row reads
    firsts: np.ndarray  # [n] int64: each row's first visible position
    lasts: np.ndarray  # [n] int64: its last
    scale: float
    out: np.ndarray
    heads: np.ndarray  # [workers, width, hd] float64 scratch: one call's query heads, zeros past them
    scores: np.ndarray  # [workers, width, >= span] float64 scratch
    sums: np.ndarray  # [workers, width, hd] float64 scratch
    sinks: np.ndarray  # [n_head] float64, or empty
    width: np.ndarray  # attention.heads(width): the token of the heads a kernel call takes
    run_job = _attend_group


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) of each float32 value, in float64 (as tanh, which cannot overflow), rounded once."""
    return (0.5 * (1.0 + np.tanh(x.astype(np.float64) / 2))).astype(np.float32)


def gate(g, u, gelu):  # g, u: [n, ff] float32 -> act(g) * u
    """SiLU (Elfwing et al., 2017) or tanh-approximated GELU (Hendrycks and Gimpel, 2016) of g, times u."""
    g, u = (np.ascontiguousarray(a, np.float32) for a in (g, u))  # as gate_address compiles for
    out = np.empty_like(g)
    _gate_jobs(*gate_code(gelu), g, u, out, 1 if g.size < SERIAL_GATES else numba.get_num_threads())
    return out


@functools.lru_cache(maxsize=None)
def gate_address(gelu: bool) -> int:
    """The address of _gate_chunk compiled for the activation (gates.activation), for jobs holding ANY in its
    token's place (shares.Addressed)."""
    rows = np.zeros((1, 1), np.float32)
    return compiled_address(_gate_chunk, (_GateChunks(rows, rows, gates.activation(gelu), rows), 0, 0))


@functools.lru_cache(maxsize=None)
def gate_code(gelu: bool) -> tuple[int, int]:
    """_gate_jobs' address and code (shares.run_addressed) for the activation."""
    rows, address = np.zeros((1, 1), np.float32), gate_address(gelu)
    return address, stashed_code(address, _GateChunks(rows, rows, ANY, rows))


@numba.njit(**_JIT)
def _gate_jobs(address, code, g, u, out, threads):
    """gate's jobs (kernels/shares.py), GATE_CHUNK outputs of a row each, on up to `threads` threads, each by
    _gate_chunk at `address` (gate_code)."""
    n_jobs = g.shape[0] * ((g.shape[1] + GATE_CHUNK - 1) // GATE_CHUNK)
    run_addressed(code, address, _GateChunks(g, u, ANY, out), n_jobs, max(1, min(threads, n_jobs)))


@numba.njit(**_JIT)
def _gate_chunk(jobs, job, worker):
    """Outputs GATE_CHUNK * job .. of the flattened [n, ff] out."""
    g, u, activation, out = jobs
    chunks = (g.shape[1] + GATE_CHUNK - 1) // GATE_CHUNK
    i, start = job // chunks, job % chunks * GATE_CHUNK
    end = min(g.shape[1], start + GATE_CHUNK)
    g_row, u_row, out_row = g[i, start:end], u[i, start:end], out[i, start:end]  # 1-d views vectorize
    gates.gate(g_row, u_row, activation, out_row)


class _NormRows(NamedTuple):
    """rms_norm's jobs: what _norm_row reads and writes."""

    x: np.ndarray  # [n, d] float32
    weight: np.ndarray  # [d] float32
    eps: float
    out: np.ndarray  # [n, d] float32
    run_job = _norm_row


class _GateChunks(NamedTuple):
    """gate's jobs: what _gate_chunk reads and writes."""

    g: np.ndarray
    u: np.ndarray
    activation: np.ndarray  # gates.activation(gelu): which function, fixed when the kernel compiles
    out: np.ndarray
    run_job = _gate_chunk
