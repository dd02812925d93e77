"""Scalar numba intrinsics: float bit casts, an atomic counter, a prefetch hint and a pointer from an address."""

from __future__ import annotations

from numba import types
from numba.extending import intrinsic

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import F32, I8, I16, I32, I64, byte_pointer, const


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
def half_bits(typingctx, value):
    """half_bits(float32 holding a float16 value) -> uint16: that float16's IEEE bits (exact)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], llvm.HalfType()), I16)

    return types.uint16(types.float32), codegen


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


@intrinsic
def prefetch(typingctx, array, offset):
    """prefetch(array, offset): a hint to bring the cache line at byte `offset` of the array's data into the
    caches; it never faults, so it may point past the end."""

    def codegen(context, builder, signature, args):
        at = byte_pointer(context, builder, signature.args[0], args[0], args[1])
        hint = llvm.FunctionType(llvm.VoidType(), [at.type, I32, I32, I32])
        read, keep, data = const(I32, 0), const(I32, 3), const(I32, 1)  # a read, kept in every cache level
        builder.call(builder.module.declare_intrinsic("llvm.prefetch", fnty=hint), [at, read, keep, data])
        return context.get_dummy_value()

    return types.none(array, types.intp), codegen


@intrinsic
def pointer_at(typingctx, address):
    """pointer_at(int64) -> void pointer: the address as a pointer, which numba.carray views as an array (the
    caller keeps the array there alive)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], I8.as_pointer())

    return types.voidptr(types.int64), codegen
