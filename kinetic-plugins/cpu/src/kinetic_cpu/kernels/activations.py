"""Activation rows quantized to int8 blocks, as llama.cpp's CPU backend does on x86 (quantize_row_q8_0
with AVX2, quantize_row_q8_K_ref), so the quantized kernels take integer dot products per block.

Q8_0: blocks of 32, scale d = amax / 127 rounded to f16, q = x * (127 / amax) rounded half to even, as
ggml's AVX2 quantize_row_q8_0 does (the reference quantizer's roundf(x / d) parts from it on ties and in
the last bit of the inverse, and llama.cpp on x86 runs the AVX2 one); the block sums of q take off the
offsets and serve the types with a minimum (Q4_1, Q5_1), as ggml's Q8_1 does; q is stored in the 32-weight
block kernels' order (see q8_0_group). Q8_K: blocks of 256, scale d = max / -127 (max: the value of largest
magnitude), q = nearest int of x / d, and the sum of every 16 q.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir as llvm
from numba import njit, types
from numba.extending import intrinsic

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.intrinsics import bits_float, float_bits
from kinetic_cpu.kernels.shares import addressed_code, run_addressed


@njit(cache=True, nogil=True)
def f16_round(value):
    """The float32 `value` rounded to the nearest float16 (ties to even), as float32."""
    bits = float_bits(value)
    sign, magnitude = bits & 0x80000000, bits & 0x7FFFFFFF
    if magnitude >= 0x7F800000:  # inf, NaN
        return value
    if magnitude >= 0x477FF000:  # rounds past 65504
        return bits_float(sign | 0x7F800000)
    if magnitude >= 0x38800000:  # a normal float16: keep 10 mantissa bits
        return bits_float(sign | ((magnitude + 0xFFF + ((magnitude >> 13) & 1)) & ~0x1FFF))
    return np.float32(math.copysign(np.rint(abs(value) * np.float32(2.0**24)) * 2.0**-24, value))


SERIAL_VALUES = 1 << 15  # below this many activations one thread beats waking the others
Q8_0, Q8_K = 0, 1


def quantize_q8_0(x: np.ndarray) -> tuple:  # x: [n, k] float32, k % 32 == 0
    """-> q [n, k] int8 in groups of blocks (q8_0_group), d [n, k/32] float32, sums [n, k/32] int32."""
    out = arrays(Q8_0, *x.shape, np.empty)
    _quantize(Q8_0, x, *out)
    return out


def quantize_q8_k(x: np.ndarray) -> tuple:  # x: [n, k] float32, k % 256 == 0
    """-> q [n, k] int8, d [n, k/256] float32, sums [n, k/16] int32 (one per 16 q)."""
    out = arrays(Q8_K, *x.shape, np.zeros)
    _quantize(Q8_K, x, *out)
    return out


def arrays(kind: int, n: int, k: int, make) -> tuple:
    """The outputs of quantize_q8_0 or quantize_q8_k (kind Q8_0 or Q8_K) for n tokens of k values, made by
    make(shape, dtype)."""
    per_scale, per_sum = (32, 32) if kind == Q8_0 else (256, 16)
    return make((n, k), np.int8), make((n, k // per_scale), np.float32), make((n, k // per_sum), np.int32)


def _quantize(kind: int, x, q, d, sums) -> None:
    """Each row of x into its row of q, d and sums, a row a job (kernels/shares.py), a prompt's rows shared among
    the threads."""
    x = np.ascontiguousarray(x, np.float32)  # as quantize_code compiles for
    threads = 1 if x.size < SERIAL_VALUES else numba.get_num_threads()
    _quantize_jobs(*quantize_code(), _QuantizeRows(kind, x, q, d, sums), max(1, min(threads, x.shape[0])))


class _QuantizeRows(NamedTuple):
    """_quantize's jobs: what _quantize_row reads and writes."""

    kind: int  # Q8_0 or Q8_K
    x: np.ndarray  # [n, k] float32
    q: np.ndarray  # arrays(kind, n, k)
    d: np.ndarray
    sums: np.ndarray


@functools.lru_cache(maxsize=None)
def quantize_code() -> tuple[int, int]:
    """_quantize_jobs' address and code (shares.run_addressed): one compiled parallel loop for every kind of job
    (the quantizers' own took 0.6 s of a first load)."""
    x = np.zeros((1, 32), np.float32)
    return addressed_code(_quantize_row, _QuantizeRows(Q8_0, x, *arrays(Q8_0, *x.shape, np.zeros)))


@njit(cache=True, nogil=True)
def _quantize_jobs(address, code, jobs, workers):
    run_addressed(code, address, jobs, jobs.x.shape[0], workers)


@njit(cache=True, nogil=True)
def _quantize_row(jobs, job, worker):
    """Row `job`."""
    _row(jobs.kind, jobs.x[job], jobs.q[job], jobs.d[job], jobs.sums[job])


@njit(cache=True, nogil=True)
def _row(kind, x, q, d, sums):  # one token's x, q: [k]; d, sums: its blocks
    if kind == Q8_0:
        _q8_0_row(x, q, d, sums)
    else:
        _q8_k_row(x, q, d, sums)


@njit(cache=True, nogil=True)
def _rows_serial(kind, x, q, d, sums):  # Torque's, by address (torque_tables.py)
    for t in range(x.shape[0]):
        _row(kind, x[t], q[t], d[t], sums[t])


@njit(cache=True, nogil=True)
def q8_0_group(b, n_blocks):
    """(first block, width) of block b's group in the Q8_0 layout: whole groups of 8, then one of 4 where
    4 or more blocks remain, then single blocks. A group stores run i (4 bytes) of its blocks side by
    side, run i of block first + l at byte 32 * first + 4 * width * i + 4 * l: the 32-weight block kernels' order."""
    whole = n_blocks // 8 * 8
    if b < whole:
        return b - b % 8, 8
    if b < whole + 4 and n_blocks - whole >= 4:
        return whole, 4
    return b, 1


@intrinsic
def _q8_0_block(typingctx, x, b, words, first, width, d, sums):
    """Block b of one token's x ([k] float32): amax = the largest |x| (compared as integer bits, so NaN
    aside as the loop that took it before), q = int8(rint(x * (127 / amax))) (0 for an all-zero block),
    run i of 4 quants to words[8 * first + b - first + width * i] (the group layout, q8_0_group), amax to
    d[b] (q8_0 rows scale it next) and the sum of q to sums[b]. Each step is the IEEE operation written."""

    def codegen(context, builder, signature, args):
        x_type, _, words_type, _, _, d_type, sums_type = signature.args
        x_value, block, words_value, first_value, width_value, d_value, sums_value = args
        floats, ints = ir.vector(ir.F32, 32), ir.vector(ir.I32, 32)

        def at(array_type, array, index, size: int):
            return ir.item_pointer(context, builder, array_type, array, index, size)

        values = ir.load(builder, at(x_type, x_value, block, 128), 0, floats)
        bits = builder.and_(builder.bitcast(values, ints), ir.const(ints, 0x7FFFFFFF))
        amax = builder.bitcast(ir.call_intrinsic(builder, "llvm.vector.reduce.umax.v32i32", ir.I32, bits), ir.F32)
        nonzero = builder.fcmp_unordered("!=", amax, ir.const(ir.F32, 0.0))
        inverse = builder.select(nonzero, builder.fdiv(ir.const(ir.F32, 127.0), amax), ir.const(ir.F32, 0.0))
        scaled = builder.fmul(values, ir.splat(builder, inverse, 32))
        q = builder.fptosi(ir.call_intrinsic(builder, "llvm.rint.v32f32", floats, scaled), ir.vector(ir.I8, 32))
        total = ir.call_intrinsic(builder, "llvm.vector.reduce.add.v32i32", ir.I32, builder.sext(q, ints))
        runs = builder.bitcast(q, ir.vector(ir.I32, 8))
        word0 = builder.add(builder.mul(first_value, ir.const(ir.I64, 7)), block)  # 8 first + (b - first)
        for i in range(8):
            word = builder.add(word0, builder.mul(width_value, ir.const(ir.I64, i)))
            ir.store(builder, builder.extract_element(runs, ir.const(ir.I32, i)), at(words_type, words_value, word, 4), 0)
        ir.store(builder, amax, at(d_type, d_value, block, 4), 0)
        ir.store(builder, total, at(sums_type, sums_value, block, 4), 0)
        return context.get_dummy_value()

    return types.none(x, types.intp, words, types.intp, types.intp, d, sums), codegen


@njit(cache=True, nogil=True)
def _q8_0_row(x, q, d, sums):
    n_blocks = x.shape[0] // 32
    words = q.view(np.int32)
    for b in range(n_blocks):
        first, width = q8_0_group(b, n_blocks)
        _q8_0_block(x, b, words, first, width, d, sums)
    for b in range(n_blocks):
        d[b] = f16_round(d[b] / np.float32(127.0))


def _peak_index(builder, bits, top):
    """The index (i64) of the first of the 8 <32 x i32> vectors' lanes equal to top."""
    index = ir.const(ir.I64, 0)
    for v in reversed(range(8)):
        hits = builder.bitcast(builder.icmp_unsigned("==", bits[v], ir.splat(builder, top, 32)), ir.I32)
        first = ir.call_intrinsic(builder, "llvm.cttz.i32", ir.I32, hits, llvm.Constant(llvm.IntType(1), 0))
        here = builder.add(builder.zext(first, ir.I64), ir.const(ir.I64, 32 * v))
        index = builder.select(builder.icmp_unsigned("!=", hits, ir.const(ir.I32, 0)), here, index)
    return index


@intrinsic
def _q8_k_block(typingctx, x, b, q, d, sums):
    """Super-block b of one token's x ([k] float32), as ggml's quantize_row_q8_K_ref: the first value of
    the largest magnitude (integer bits) sets inverse = -127 / it, q = int8(min(127, rint(inverse * x))),
    d = 1 / inverse, and the sum of every 16 q; an all-zero block is left as it is (zeros)."""

    def codegen(context, builder, signature, args):
        x_type, _, q_type, d_type, sums_type = signature.args
        x_value, block, q_value, d_value, sums_value = args
        floats, ints = ir.vector(ir.F32, 32), ir.vector(ir.I32, 32)

        def at(array_type, array, index, size: int):
            return ir.item_pointer(context, builder, array_type, array, index, size)

        x_at = at(x_type, x_value, block, 1024)
        values = [ir.load(builder, x_at, 128 * v, floats) for v in range(8)]
        bits = [builder.and_(builder.bitcast(value, ints), ir.const(ints, 0x7FFFFFFF)) for value in values]
        widest = bits[0]
        for more in bits[1:]:
            widest = ir.call_intrinsic(builder, "llvm.umax.v32i32", ints, widest, more)
        top = ir.call_intrinsic(builder, "llvm.vector.reduce.umax.v32i32", ir.I32, widest)
        with builder.if_then(builder.icmp_unsigned("!=", top, ir.const(ir.I32, 0))):
            peak = ir.load(builder, builder.gep(x_at, [builder.mul(_peak_index(builder, bits, top), ir.const(ir.I64, 4))]), 0, ir.F32)
            inverse = builder.fdiv(ir.const(ir.F32, -127.0), peak)
            q_at, sums_at = at(q_type, q_value, block, 256), at(sums_type, sums_value, block, 64)
            for v, value in enumerate(values):
                rounded = ir.call_intrinsic(builder, "llvm.rint.v32f32", floats, builder.fmul(ir.splat(builder, inverse, 32), value))
                capped = builder.select(builder.fcmp_ordered("<", rounded, ir.const(floats, 127.0)), rounded, ir.const(floats, 127.0))
                quants = builder.fptosi(capped, ir.vector(ir.I8, 32))
                ir.store(builder, quants, q_at, 32 * v)
                wide = builder.sext(quants, ints)
                for half in range(2):
                    part = builder.shuffle_vector(wide, wide, ir.indices(range(16 * half, 16 * half + 16)))
                    total = ir.call_intrinsic(builder, "llvm.vector.reduce.add.v16i32", ir.I32, part)
                    ir.store(builder, total, sums_at, 4 * (2 * v + half))
            ir.store(builder, builder.fdiv(ir.const(ir.F32, 1.0), inverse), at(d_type, d_value, block, 4), 0)
        return context.get_dummy_value()

    return types.none(x, types.intp, q, d, sums), codegen


@njit(cache=True, nogil=True)
def _q8_k_row(x, q, d, sums):  # q, d, sums start zeroed (quantize_q8_k)
    for b in range(x.shape[0] // 256):
        _q8_k_block(x, b, q, d, sums)
