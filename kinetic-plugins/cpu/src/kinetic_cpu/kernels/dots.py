"""Exact integer dot products of int8 vectors, in IR.

On x86 with AVX2 they use pmaddubsw and pmaddwd directly (LLVM would widen through pmovsx otherwise),
and vpdpbusd for runs of 4 where the CPU has VNNI (AVX-VNNI or AVX512-VNNI); elsewhere plain IR that any
LLVM target lowers. All give the same integers: no sum can overflow.
"""

from __future__ import annotations

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import I16, I32, call_intrinsic, const, host_has, indices, vector

AVX2 = host_has("avx2")
VNNI = AVX2 and (host_has("avxvnni") or (host_has("avx512vnni") and host_has("avx512vl")))
WIDE = AVX2 and host_has("avx512bw")  # pmaddubsw and pmaddwd on 64 bytes at once
VNNI_WIDE = host_has("avx512vnni")  # with VNNI, vpdpbusd on 64 bytes at once


def _pair_products(builder, q, x, q_signed: bool) -> llvm.Value:
    """Generic IR: <n/2 x i32> sums of adjacent products of <n x i8> q and signed x."""
    n = q.type.count
    half, wide = vector(I16, n), vector(I32, n)
    q16 = builder.sext(q, half) if q_signed else builder.zext(q, half)
    return fold_pairs(builder, builder.mul(builder.sext(q16, wide), builder.sext(builder.sext(x, half), wide)))


def _x86_pairs(builder, q, x, q_signed: bool) -> llvm.Value:
    """AVX2: <n/2 x i16> pair sums by pmaddubsw (unsigned q times signed x; a signed q lends x its sign).
    Exact: |q| <= 128 and |x| <= 127, or q <= 63, so no pair reaches the i16 saturation at 32767."""
    q, x = _sign_to_x(builder, q, x) if q_signed else (q, x)
    name = {64: "llvm.x86.avx512.pmaddubs.w.512", 32: "llvm.x86.avx2.pmadd.ub.sw"}.get(q.type.count,
                                                                                    "llvm.x86.ssse3.pmadd.ub.sw.128")
    return call_intrinsic(builder, name, vector(I16, q.type.count // 2), q, x)


def _sign_to_x(builder, q, x) -> tuple[llvm.Value, llvm.Value]:
    """(|q|, x * sign(q)): the same products with an unsigned left operand, as x86's byte dots want."""
    n = q.type.count
    x = call_intrinsic(builder, "llvm.x86.avx2.psign.b" if n == 32 else "llvm.x86.ssse3.psign.b.128", q.type, x, q)
    return call_intrinsic(builder, f"llvm.abs.v{n}i8", q.type, q, llvm.Constant(llvm.IntType(1), 0)), x


def quad_sums(builder, q, x, q_signed: bool, into=None) -> llvm.Value:
    """<n/4 x i32>: lane j = sum of q[i] * x[i] over i = 4j .. 4j + 3 (plus lane j of `into`, if given),
    for <n x i8> q (signed, or unsigned <= 63 without VNNI) and signed x, |x| <= 127; n is 16, 32 or 64."""
    words = vector(I32, q.type.count // 4)
    if q.type.count == 64 and not (VNNI and VNNI_WIDE):  # as two halves of 32
        halves = [[builder.shuffle_vector(v, v, indices(range(h, h + 32))) for v in (q, x)] for h in (0, 32)]
        parts = [quad_sums(builder, *half, q_signed) for half in halves]
        sums = builder.shuffle_vector(parts[0], parts[1], indices(range(16)))
        return sums if into is None else builder.add(into, sums)
    if VNNI:  # vpdpbusd: unsigned q times signed x, 4 at a time, into the sums
        q, x = _sign_to_x(builder, q, x) if q_signed else (q, x)
        name = f"llvm.x86.avx512.vpdpbusd.{32 * q.type.count // 4}"
        start = const(words, 0) if into is None else into
        return call_intrinsic(builder, name, words, start, builder.bitcast(q, words), builder.bitcast(x, words))
    if AVX2:
        sums = _pairs_summed(builder, _x86_pairs(builder, q, x, q_signed))
    else:
        sums = fold_pairs(builder, _pair_products(builder, q, x, q_signed))
    return sums if into is None else builder.add(into, sums)


def summed_quad_sums(builder, qs: list, xs: list, q_signed: bool, q_max: int = 0) -> llvm.Value:
    """The sum of quad_sums(q, x) over the pairs of <n x i8> quants qs and signed xs. With AVX2 but not VNNI,
    for unsigned quants of at most q_max, the pmaddubsw pair sums of as many pairs as cannot leave int16
    (|x| <= 127) are added as int16 before one pmaddwd: fewer multiplies, the same integers."""
    merged = 32767 // (2 * q_max * 127) if AVX2 and not VNNI and not q_signed and q_max else 1
    if merged <= 1:
        total = None
        for q, x in zip(qs, xs):
            total = quad_sums(builder, q, x, q_signed, into=total)
        return total
    total = None
    for first in range(0, len(qs), merged):
        pairs = None
        for q, x in zip(qs[first : first + merged], xs[first : first + merged]):
            part = _x86_pairs(builder, q, x, False)
            pairs = part if pairs is None else builder.add(pairs, part)
        sums = _pairs_summed(builder, pairs)
        total = sums if total is None else builder.add(total, sums)
    return total


def _pairs_summed(builder, pairs) -> llvm.Value:
    """AVX2: <m/2 x i32> adjacent lanes of <m x i16> pairs added (pmaddwd by ones)."""
    words = vector(I32, pairs.type.count // 2)
    name = "llvm.x86.avx2.pmadd.wd" if pairs.type.count == 16 else "llvm.x86.sse2.pmadd.wd"
    return call_intrinsic(builder, name, words, pairs, const(pairs.type, 1))


def scaled_quad_sums(builder, q, x, pair_scales, q_signed: bool = False) -> llvm.Value:
    """quad_sums of <n x i8> q (unsigned <= 63, or signed with n 32) with each adjacent pair's sum times its
    <n/2 x i16> pair_scales lane; n is 32, or 64 where WIDE."""
    n = q.type.count
    if AVX2:
        pairs = _x86_pairs(builder, q, x, q_signed)
        name = "llvm.x86.avx512.pmaddw.d.512" if n == 64 else "llvm.x86.avx2.pmadd.wd"
        return call_intrinsic(builder, name, vector(I32, n // 4), pairs, pair_scales)
    pairs = _pair_products(builder, q, x, q_signed)
    return fold_pairs(builder, builder.mul(pairs, builder.sext(pair_scales, vector(I32, n // 2))))


def fold_pairs(builder, v) -> llvm.Value:
    """Adjacent lanes added: <2n x i32> -> <n x i32>."""
    n = v.type.count
    even = builder.shuffle_vector(v, v, indices(range(0, n, 2)))
    odd = builder.shuffle_vector(v, v, indices(range(1, n, 2)))
    return builder.add(even, odd)


def int_sum(builder, v) -> llvm.Value:
    return call_intrinsic(builder, f"llvm.vector.reduce.add.v{v.type.count}i32", v.type.element, v)
