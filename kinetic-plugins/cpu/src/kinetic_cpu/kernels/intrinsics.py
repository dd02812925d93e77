"""Scalar numba intrinsics: float bit casts and an atomic counter."""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import F32, I32, I64, const


@intrinsic
def float_bits(typingctx, value):
    """float_bits(float32) -> int64: its IEEE bits, zero-extended."""

    def codegen(context, builder, signature, args):
        return builder.zext(builder.bitcast(args[0], I32), I64)

    return types.int64(types.float32), codegen


@intrinsic
def bits_float(typingctx, bits):
    """bits_float(int64) -> float32: the float whose IEEE bits are the low 32 bits."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.trunc(args[0], I32), F32)

    return types.float32(types.int64), codegen


@intrinsic
def bits_double(typingctx, bits):
    """bits_double(int64) -> float64: the double whose IEEE bits these are."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def fetch_add(typingctx, counter):
    """fetch_add(counter) -> int64: atomically add 1 to counter[0] (int64) and give the value before."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", data, const(I64, 1), "monotonic")

    return types.int64(counter), codegen
