"""Exact integer dot products of int8 vectors, in IR.

On x86 with AVX2 they use pmaddubsw and pmaddwd directly (LLVM would widen through pmovsx otherwise),
and vpdpbusd for runs of 4 where the CPU has VNNI (AVX-VNNI or AVX512-VNNI); elsewhere plain IR that any
LLVM target lowers. All give the same integers: no sum can overflow.
"""

from __future__ import annotations

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import I16, I32, const, host_has, indices, vector

AVX2 = host_has("avx2")
VNNI = AVX2 and (host_has("avxvnni") or (host_has("avx512vnni") and host_has("avx512vl")))


def _x86_call(builder, name: str, result: llvm.Type, *operands) -> llvm.Value:
    fn_type = llvm.FunctionType(result, [v.type for v in operands])
    return builder.call(builder.module.declare_intrinsic(name, fnty=fn_type), list(operands))


def _pair_products(builder, q, x, q_signed: bool) -> llvm.Value:
    """Generic IR: <16 x i32> sums of adjacent products of <32 x i8> q and signed x."""
    half, wide = vector(I16, 32), vector(I32, 32)
    q16 = builder.sext(q, half) if q_signed else builder.zext(q, half)
    return fold_pairs(builder, builder.mul(builder.sext(q16, wide), builder.sext(builder.sext(x, half), wide)))


def _x86_pairs(builder, q, x, q_signed: bool) -> llvm.Value:
    """AVX2: <16 x i16> pair sums by pmaddubsw (unsigned q times signed x; a signed q lends x its sign).
    Exact: |q| <= 128 and |x| <= 127, so no pair reaches the i16 saturation at 32767."""
    q, x = _sign_to_x(builder, q, x) if q_signed else (q, x)
    return _x86_call(builder, "llvm.x86.avx2.pmadd.ub.sw", vector(I16, 16), q, x)


def _sign_to_x(builder, q, x) -> tuple[llvm.Value, llvm.Value]:
    """(|q|, x * sign(q)): the same products with an unsigned left operand, as x86's byte dots want."""
    x = _x86_call(builder, "llvm.x86.avx2.psign.b", q.type, x, q)
    return _x86_call(builder, "llvm.abs.v32i8", q.type, q, llvm.Constant(llvm.IntType(1), 0)), x


def quad_sums(builder, q, x, q_signed: bool) -> llvm.Value:
    """<8 x i32>: lane j = sum of q[i] * x[i] over i = 4j .. 4j + 3, for <32 x i8> q (signed or unsigned)
    and signed x, |x| <= 127."""
    if VNNI:  # vpdpbusd: unsigned q times signed x, 4 at a time, into zero
        q, x = _sign_to_x(builder, q, x) if q_signed else (q, x)
        words = vector(I32, 8)
        return _x86_call(builder, "llvm.x86.avx512.vpdpbusd.256", words, const(words, 0),
                         builder.bitcast(q, words), builder.bitcast(x, words))
    if AVX2:
        pairs = _x86_pairs(builder, q, x, q_signed)
        return _x86_call(builder, "llvm.x86.avx2.pmadd.wd", vector(I32, 8), pairs, const(vector(I16, 16), 1))
    return fold_pairs(builder, _pair_products(builder, q, x, q_signed))


def bias_correction(builder, q) -> llvm.Value:
    """<8 x i32>: -128 times each run of 4 of signed <32 x i8> q, where biased_quad_sums starts (VNNI only)."""
    words = vector(I32, 8)
    times_128 = _x86_call(builder, "llvm.x86.avx512.vpdpbusd.256", words, const(words, 0),
                          builder.bitcast(const(q.type, -128), words), builder.bitcast(q, words))
    return builder.sub(const(words, 0), times_128)


def biased_quad_sums(builder, correction, q, x) -> llvm.Value:
    """quad_sums of signed q and x as (x + 128) . q + correction (bias_correction(q)), VNNI only: the same
    integers (no sum nears 2^31) without giving x the sign of q token by token, which pays when q serves
    many tokens. x + 128 as a byte is x with its top bit flipped."""
    words = vector(I32, 8)
    biased = builder.xor(x, const(x.type, -128))
    return _x86_call(builder, "llvm.x86.avx512.vpdpbusd.256", words, correction, builder.bitcast(biased, words),
                     builder.bitcast(q, words))


def scaled_quad_sums(builder, q, x, pair_scales) -> llvm.Value:
    """quad_sums of unsigned q (<= 63) with each adjacent pair's sum times its <16 x i16> pair_scales lane."""
    if AVX2:
        pairs = _x86_pairs(builder, q, x, False)
        return _x86_call(builder, "llvm.x86.avx2.pmadd.wd", vector(I32, 8), pairs, pair_scales)
    pairs = _pair_products(builder, q, x, False)
    return fold_pairs(builder, builder.mul(pairs, builder.sext(pair_scales, vector(I32, 16))))


def fold_pairs(builder, v) -> llvm.Value:
    """Adjacent lanes added: <2n x i32> -> <n x i32>."""
    n = v.type.count
    even = builder.shuffle_vector(v, v, indices(range(0, n, 2)))
    odd = builder.shuffle_vector(v, v, indices(range(1, n, 2)))
    return builder.add(even, odd)


def int_sum(builder, v) -> llvm.Value:
    fn_type = llvm.FunctionType(v.type.element, [v.type])
    fn = builder.module.declare_intrinsic(f"llvm.vector.reduce.add.v{v.type.count}i32", fnty=fn_type)
    return builder.call(fn, [v])


def block_sums(builder, parts) -> llvm.Value:
    """<n x i32> whose lane j is the sum of the n lanes of parts[j] (n = len(parts), a power of two)."""
    while len(parts) > 1:
        n = parts[0].type.count
        parts = [
            builder.add(
                builder.shuffle_vector(a, b, indices(range(0, 2 * n, 2))),
                builder.shuffle_vector(a, b, indices(range(1, 2 * n, 2))),
            )
            for a, b in zip(parts[0::2], parts[1::2])
        ]
    return parts[0]
