"""Attention's float64 sums and softmax in IR, each sum kept in a register from its first term to its last.

scores(q, keys, first, n, out):   out[g, t] = sum over j in order of q[g, j] * key[first + t, j]
softmax(scores, n, scale, totals) scores[g, t] = e^(scale * score - peak), totals[g] their sum in order
weighted(w, n, values, out):      out[g, j] = sum over t < n in order of w[g, t] * values[t, j]

q: [heads, hd] float64 holding float16 values and the keys (float16 bits, uint16, blocked: see scores), so each
product is exact in float64 and fma(q, k, s) rounds as s + q * k does: one fma a term. A weighted sum multiplies,
then adds (two roundings), as numpy and numba's loops do. So both give, bit for bit, the plain loops' sums in order.

A q8_0 cache (int8) holds each position's row as ggml's block_q8_0 bytes: per 32 dimensions a float16 scale d
(2 bytes, little-endian) and 32 int8 q. A value d * q has at most 19 significant bits, exact in float64, so the
q8_0 kernels run the same sums in the same order on the values the cache holds.

A call takes a power of two of heads (of one KV head), up to IN_FLIGHT; they share each vector of keys
or values loaded (8 positions or 8 dimensions, converted to float64 once); with fewer heads each takes
several vectors, so about IN_FLIGHT independent sums hide the fma or add latency. The count is fixed when a
kernel compiles, by a token (heads()): a model's calls all take one count (ops.attend pads a group of heads up
to it), so only that count's unrolled body is compiled, a fifth of the IR and of numba's compile time that
a body for every count would take. The key cache keeps blocks of KEY_BLOCK positions dimension
by dimension, so a step's keys are one run of memory the prefetcher follows. Vectors past an end are
masked.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from kinetic_cpu.kernels import exponential, ir
from kinetic_cpu.kernels.ir import F64, I8, I16, I64

LANES = 8  # float64 lanes of a vector
KEY_BLOCK = 16  # positions a block of the key cache holds together, dimension by dimension
# heads a call takes at most, and the sums it keeps going at once: half the vector registers (32 of 512 bits
# with AVX-512; 16 of 256 bits with AVX2, two to a vector of 8 doubles)
IN_FLIGHT = 16 if ir.host_has("avx512f") else 4
DOUBLES = ir.vector(F64, LANES)
Q8_VALUES, Q8_BYTES = 32, 34  # a q8_0 block: 32 values as a float16 scale and 32 int8 (ggml's block_q8_0)
HALF = llvm.HalfType()


HEAD_COUNTS = tuple(1 << i for i in range(IN_FLIGHT.bit_length()))  # the head counts a call takes


def heads(count: int) -> np.ndarray:
    """The token (ir.token) telling scores, softmax and weighted, as they compile, that a call takes `count`
    heads (in HEAD_COUNTS)."""
    return ir.token(f"heads{count}")


def _count(token) -> int:
    """The head count a token's numba type (heads()) stands for."""
    return int(ir.record_name(token).removeprefix("heads"))


def _load_halves(builder, pointer, mask):
    """8 float16 (their bits) at an i8* pointer (masked) as float64: exact."""
    return _half_doubles(builder, ir.masked_load(builder, pointer, ir.vector(I16, LANES), mask))


def _int8_doubles(builder, pointer, mask):
    """8 int8 at an i8* pointer (masked) as float64."""
    return builder.sitofp(ir.masked_load(builder, pointer, ir.vector(I8, LANES), mask), DOUBLES)


def _half_doubles(builder, bits):
    """float16 bits (i16, or a vector of them) as float64."""
    if isinstance(bits.type, llvm.VectorType):
        return builder.fpext(builder.bitcast(bits, ir.vector(HALF, LANES)), DOUBLES)
    return builder.fpext(builder.bitcast(bits, HALF), F64)


def _q8_values(builder, row, j, hd, mask):
    """<8 x double> of dimensions j .. j + 7 (j an i64, a multiple of 8) of one position's q8_0 row (an i8*
    pointer), lanes off in mask zero. A vector past hd is read at hd - 8 (its lanes are all off), so that
    no byte past the row is touched."""
    last = builder.sub(hd, ir.const(I64, LANES))
    j = builder.select(builder.icmp_signed("<", j, last), j, last)
    block = builder.mul(builder.sdiv(j, ir.const(I64, Q8_VALUES)), ir.const(I64, Q8_BYTES))
    scale = _half_doubles(builder, ir.load(builder, builder.gep(row, [block]), 0, I16))
    quants = builder.gep(row, [builder.add(block, builder.add(builder.srem(j, ir.const(I64, Q8_VALUES)),
                                                                ir.const(I64, 2)))])
    return builder.fmul(_int8_doubles(builder, quants, mask), ir.splat(builder, scale, LANES))


def _splat_element(context, builder, array_type, array, row, index):
    """<8 x double> of array[row, index] (a 2D float64 array)."""
    at = ir.row_pointer(context, builder, array_type, array, row, index)
    return ir.splat(builder, ir.load(builder, at, 0, F64), LANES)


def _store_sums(context, builder, sums, out_type, out, column0):
    """sums[g][v] (vectors) to out[g, column0 + 8 v], each vector under its mask."""
    for g, vectors in enumerate(sums):
        for v, (slot, mask) in enumerate(vectors):
            at = ir.row_pointer(context, builder, out_type, out, ir.const(I64, g),
                                builder.add(column0, ir.const(I64, LANES * v)))
            ir.masked_store(builder, builder.load(slot), at, mask)


def _zeroed_sums(builder, heads: int, masks):
    """A register slot (alloca, promoted by LLVM) per head and vector, each set to zero, with its mask."""
    sums = [[(cgutils.alloca_once(builder, DOUBLES), mask) for mask in masks] for _ in range(heads)]
    for vectors in sums:
        for slot, _ in vectors:
            builder.store(ir.const(DOUBLES, 0.0), slot)
    return sums


def _masks(builder, remaining, n_vectors: int):
    return [ir.lanes_below(builder, builder.sub(remaining, ir.const(I64, LANES * v)), LANES) for v in range(n_vectors)]


def _key_offsets(builder, width, start, end, per_head: int, size: int):
    """Byte offsets in a KV head's blocked keys (elements of `size` bytes, `width` a position) of the per_head
    vectors of 8 positions from `start` (a multiple of 8): position p, element j lies at
    ((p // KEY_BLOCK) * width + j) * KEY_BLOCK + p % KEY_BLOCK. A vector wholly from `end` on (all its lanes off)
    reads at the first vector instead: its masked loads never touch the blocks past the keys written, whose pages
    may not be mapped yet (lazy_zeros), where every masked load costs the processor an assist (on a 2-core AMD
    EPYC, an early decode step's attention 12 times slower)."""
    offsets = []
    for v in range(per_head):
        p = builder.add(start, ir.const(I64, LANES * v))
        block, within = builder.sdiv(p, ir.const(I64, KEY_BLOCK)), builder.srem(p, ir.const(I64, KEY_BLOCK))
        at = builder.mul(builder.add(builder.mul(builder.mul(block, width), ir.const(I64, KEY_BLOCK)), within),
                         ir.const(I64, size))
        offsets.append(at if v == 0 else builder.select(builder.icmp_signed("<", p, end), at, offsets[0]))
    return offsets


def _f16_keys(builder, keys_at, hd, offsets, masks, add) -> None:
    """add(j, <8 x double> of dimension j per vector of positions), for j = 0 .. hd - 1, from float16 keys."""
    with cgutils.for_range(builder, hd) as dim:
        row = builder.gep(keys_at, [builder.mul(dim.index, ir.const(I64, 2 * KEY_BLOCK))])
        add(dim.index, [_load_halves(builder, builder.gep(row, [offset]), mask)
                        for offset, mask in zip(offsets, masks)])


def _q8_keys(builder, keys_at, width, offsets, masks, add) -> None:
    """As _f16_keys, from q8_0 keys: a position's column holds its blocks' bytes (module docstring), so a
    block's scales are two rows of bytes (low, high) and its 32 quants the next 32 rows."""
    def row_at(r):
        return builder.gep(keys_at, [builder.mul(r, ir.const(I64, KEY_BLOCK))])

    def byte_doubles(r, offset, mask):
        return _int8_doubles(builder, builder.gep(row_at(r), [offset]), mask)

    with cgutils.for_range(builder, builder.sdiv(width, ir.const(I64, Q8_BYTES))) as block:
        first = builder.mul(block.index, ir.const(I64, Q8_BYTES))
        scales = []
        for offset, mask in zip(offsets, masks):
            low, high = (ir.masked_load(builder, builder.gep(row_at(builder.add(first, ir.const(I64, b))), [offset]),
                                        ir.vector(I8, LANES), mask) for b in (0, 1))
            wide = ir.vector(I16, LANES)
            bits = builder.or_(builder.zext(low, wide), builder.shl(builder.zext(high, wide), ir.const(wide, 8)))
            scales.append(_half_doubles(builder, bits))
        with cgutils.for_range(builder, ir.const(I64, Q8_VALUES)) as i:
            r = builder.add(first, builder.add(i.index, ir.const(I64, 2)))
            add(builder.add(builder.mul(block.index, ir.const(I64, Q8_VALUES)), i.index),
                [builder.fmul(byte_doubles(r, offset, mask), scale) for offset, mask, scale in zip(offsets, masks, scales)])


def _position_masks(builder, start, first, end, per_head: int):
    """<8 x i1> per vector of positions start + 8 v ..: set for first <= p < end."""
    lanes = llvm.Constant(ir.vector(I64, LANES), list(range(LANES)))
    masks = []
    for v in range(per_head):
        p = builder.add(ir.splat(builder, builder.add(start, ir.const(I64, LANES * v)), LANES), lanes)
        masks.append(builder.and_(builder.icmp_signed(">=", p, ir.splat(builder, first, LANES)),
                                  builder.icmp_signed("<", p, ir.splat(builder, end, LANES))))
    return masks


@intrinsic
def scores(typingctx, q, keys, first, n, out, heads):
    """out[g, t < n] for g < the token's count of heads (heads()), t < n: see the module's docstring. keys: one KV
    head's [blocks, width, KEY_BLOCK] (uint16 float16 bits, width hd; or int8, width hd / 32 * 34 bytes of q8_0
    blocks),
    so the keys read together lie together; the vectors start at multiples of 8 and mask off what lies
    before first or from first + n on."""
    q8 = keys.dtype == types.int8

    def codegen(context, builder, signature, args):
        q_type, keys_type, _, _, out_type, _ = signature.args
        q_value, keys_value, first_value, n_value, out_value, _ = args
        width = cgutils.unpack_tuple(builder, context.make_array(keys_type)(context, builder, keys_value).shape, 3)[1]
        keys_at = ir.byte_pointer(context, builder, keys_type, keys_value)
        aligned = builder.mul(builder.sdiv(first_value, ir.const(I64, LANES)), ir.const(I64, LANES))
        end = builder.add(first_value, n_value)

        def emit(heads: int):
            per_head = max(1, IN_FLIGHT // heads)
            span = LANES * per_head
            with cgutils.for_range(builder, ir.ceil_div(builder, builder.sub(end, aligned), span)) as step:
                start = builder.add(aligned, builder.mul(step.index, ir.const(I64, span)))
                masks = _position_masks(builder, start, first_value, end, per_head)
                sums = _zeroed_sums(builder, heads, masks)

                def add(dim, k):  # sums += q[g, dim] * k, one fma a term
                    for g in range(heads):
                        q_g = _splat_element(context, builder, q_type, q_value, ir.const(I64, g), dim)
                        for v, (slot, _) in enumerate(sums[g]):
                            builder.store(ir.fma(builder, q_g, k[v], builder.load(slot)), slot)

                offsets = _key_offsets(builder, width, start, end, per_head, 1 if q8 else 2)
                (_q8_keys if q8 else _f16_keys)(builder, keys_at, width, offsets, masks, add)
                _store_sums(context, builder, sums, out_type, out_value, builder.sub(start, first_value))

        emit(_count(heads))
        return context.get_dummy_value()

    return types.none(q, keys, types.intp, types.intp, out, heads), codegen


@intrinsic
def weighted(typingctx, w, n, values, out, heads):
    """out[g, j] for g < the token's count of heads (heads()), j < out.shape[1]: see the module's docstring. values:
    [n, hd] uint16 (float16 bits), or [n, hd / 32 * 34] int8 (q8_0 blocks)."""
    q8 = values.dtype == types.int8

    def codegen(context, builder, signature, args):
        w_type, _, values_type, out_type, _ = signature.args
        w_value, n_value, values_value, out_value, _ = args
        hd = cgutils.unpack_tuple(builder, context.make_array(out_type)(context, builder, out_value).shape, 2)[1]

        def emit(heads: int):
            per_head = max(1, IN_FLIGHT // heads)
            span = LANES * per_head
            with cgutils.for_range(builder, ir.ceil_div(builder, hd, span)) as step:
                j0 = builder.mul(step.index, ir.const(I64, span))
                sums = _zeroed_sums(builder, heads, _masks(builder, builder.sub(hd, j0), per_head))
                with cgutils.for_range(builder, n_value) as position:
                    if q8:
                        row = ir.row_pointer(context, builder, values_type, values_value, position.index, ir.const(I64, 0))
                        v_t = [_q8_values(builder, row, builder.add(j0, ir.const(I64, LANES * v)), hd, sums[0][v][1])
                               for v in range(per_head)]
                    else:
                        row = ir.row_pointer(context, builder, values_type, values_value, position.index, j0)
                        v_t = [_load_halves(builder, builder.gep(row, [ir.const(I64, 2 * LANES * v)]), sums[0][v][1])
                               for v in range(per_head)]
                    for g in range(heads):
                        w_g = _splat_element(context, builder, w_type, w_value, ir.const(I64, g), position.index)
                        for v, (slot, _) in enumerate(sums[g]):
                            builder.store(builder.fadd(builder.load(slot), builder.fmul(w_g, v_t[v])), slot)
                _store_sums(context, builder, sums, out_type, out_value, j0)

        emit(_count(heads))
        return context.get_dummy_value()

    return types.none(w, types.intp, values, out, heads), codegen


def _peak(context, builder, scores_type, scores, g: int, n, scale):
    """Row g of scores times scale, in place; -> its largest value (a double)."""
    ninf = ir.const(DOUBLES, float("-inf"))
    best = cgutils.alloca_once_value(builder, ninf)

    def emit(start, mask):
        at = ir.row_pointer(context, builder, scores_type, scores, ir.const(I64, g), start)
        scaled = builder.fmul(ir.load_lanes(builder, at, DOUBLES, mask), ir.splat(builder, scale, LANES))
        ir.store_lanes(builder, scaled, at, mask)
        candidate = scaled if mask is None else builder.select(mask, scaled, ninf)
        peak = builder.load(best)
        builder.store(builder.select(builder.fcmp_ordered(">", candidate, peak), candidate, peak), best)

    ir.over_vectors(builder, n, LANES, emit)
    lanes = builder.load(best)
    peak = builder.extract_element(lanes, ir.const(ir.I32, 0))
    for lane in range(1, LANES):
        value = builder.extract_element(lanes, ir.const(ir.I32, lane))
        peak = builder.select(builder.fcmp_ordered(">", value, peak), value, peak)
    return peak


@intrinsic
def softmax(typingctx, scores, n, scale, totals, heads):
    """For each row g < the token's count of heads (heads()) of scores: scores[g, :n] *= scale, then each becomes
    e^(score - peak) (exponential.exp), and totals[g] = their sum in position order. The heads' sums are
    independent chains, interleaved, so the in-order adds overlap."""

    def codegen(context, builder, signature, args):
        scores_type, _, _, totals_type, _ = signature.args
        scores_value, n_value, scale_value, totals_value, _ = args

        def emit_heads(heads: int):
            peaks = [_peak(context, builder, scores_type, scores_value, g, n_value, scale_value) for g in range(heads)]
            sums = [cgutils.alloca_once_value(builder, ir.const(F64, 0.0)) for _ in range(heads)]

            def emit(start, mask):
                for g in range(heads):
                    at = ir.row_pointer(context, builder, scores_type, scores_value, ir.const(I64, g), start)
                    shifted = builder.fsub(ir.load_lanes(builder, at, DOUBLES, mask), ir.splat(builder, peaks[g], LANES))
                    powers = exponential.exp(builder, shifted)
                    if mask is not None:  # past n: + 0.0 below, which leaves a sum of exps as it is
                        powers = builder.select(mask, powers, ir.const(DOUBLES, 0.0))
                    ir.store_lanes(builder, powers, at, mask)
                    total = builder.load(sums[g])
                    for lane in range(LANES):
                        total = builder.fadd(total, builder.extract_element(powers, ir.const(ir.I32, lane)))
                    builder.store(total, sums[g])

            ir.over_vectors(builder, n_value, LANES, emit)
            out = ir.byte_pointer(context, builder, totals_type, totals_value)
            for g, slot in enumerate(sums):
                ir.store(builder, builder.load(slot), out, 8 * g)

        emit_heads(_count(heads))
        return context.get_dummy_value()

    return types.none(scores, types.intp, types.float64, totals, heads), codegen

