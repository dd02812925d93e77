"""LLVM IR basics for the kernels' numba intrinsics: types and constants, pointers into numba arrays,
unaligned loads and stores, a loop over a batch's tokens, and what the target CPU has.

Nothing in the kernels' IR uses fast-math flags: every float operation is the IEEE operation written,
fused multiply-adds included (llvm.fma rounds once, on any target: a libm call where the CPU has no FMA).
"""

from __future__ import annotations

from contextlib import contextmanager

import llvmlite.binding as llvm_binding
from llvmlite import ir
from numba.core import cgutils, config

I8, I16, I32, I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32 = ir.FloatType()


def vector(element: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(element, n)


def const(ty: ir.Type, value) -> ir.Constant:
    """value in every lane of a vector type, or the scalar constant."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def indices(values) -> ir.Constant:
    return ir.Constant(vector(I32, len(values)), list(values))


def byte_pointer(context, builder, array_type, array, offset) -> ir.Value:
    """i8* to byte `offset` (an i64 value) of an array's data, whatever its element type."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(builder.bitcast(data, I8.as_pointer()), [offset])


def row_pointer(context, builder, array_type, array, row, index) -> ir.Value:
    """i8* to element [row, index] (i64 values) of a C-contiguous 2D array."""
    view = context.make_array(array_type)(context, builder, array)
    row_stride = cgutils.unpack_tuple(builder, view.strides, 2)[0]
    start = builder.bitcast(view.data, I8.as_pointer())
    element = context.get_abi_sizeof(context.get_data_type(array_type.dtype))
    offset = builder.add(builder.mul(row, row_stride), builder.mul(index, const(I64, element)))
    return builder.gep(start, [offset])


def member(builder, tuple_type, value, i: int):
    """(numba type, value) of member i of a numba tuple."""
    return tuple_type.types[i], builder.extract_value(value, i)


def n_tokens(context, builder, array_type, array) -> ir.Value:
    """The row count (i64) of a 2D array."""
    return cgutils.unpack_tuple(builder, context.make_array(array_type)(context, builder, array).shape, 2)[0]


@contextmanager
def for_tokens(context, builder, array_type, array):
    """Loop over the rows (tokens) of a 2D array: yields the row index (i64)."""
    with cgutils.for_range(builder, n_tokens(context, builder, array_type, array)) as loop:
        yield loop.index


def load(builder, pointer, offset: int, ty: ir.Type) -> ir.Value:
    """An unaligned load of ty at byte `offset` from an i8* pointer."""
    at = builder.gep(pointer, [const(I64, offset)])
    return builder.load(builder.bitcast(at, ty.as_pointer()), align=1)


def store(builder, value, pointer, offset: int) -> None:
    at = builder.gep(pointer, [const(I64, offset)])
    builder.store(value, builder.bitcast(at, value.type.as_pointer()), align=1)


def add_into(builder, pointer, value) -> None:
    """*pointer += value (float or float vector)."""
    store(builder, builder.fadd(load(builder, pointer, 0, value.type), value), pointer, 0)


def load_bytes(builder, pointer, offset: int, n: int) -> ir.Value:
    return load(builder, pointer, offset, vector(I8, n))


def call_intrinsic(builder, name: str, result: ir.Type, *operands) -> ir.Value:
    """A call of the LLVM intrinsic `name` (declared on first use) returning `result`."""
    fn_type = ir.FunctionType(result, [v.type for v in operands])
    return builder.call(builder.module.declare_intrinsic(name, fnty=fn_type), list(operands))


def fma(builder, a, b, c) -> ir.Value:
    """a * b + c rounded once (IEEE fusedMultiplyAdd), lane by lane."""
    name = f"llvm.fma.v{a.type.count}f32" if isinstance(a.type, ir.VectorType) else "llvm.fma.f32"
    return call_intrinsic(builder, name, a.type, a, b, c)


def splat(builder, scalar, n: int) -> ir.Value:
    """<n x T> with scalar in every lane."""
    one = builder.insert_element(ir.Constant(vector(scalar.type, 1), None), scalar, const(I32, 0))
    return builder.shuffle_vector(one, one, ir.Constant(vector(I32, n), [0] * n))


def as_lanes(builder, scalar) -> ir.Value:
    """A scalar as a one-lane vector, so one code path serves 1 and n lanes."""
    return builder.insert_element(ir.Constant(vector(scalar.type, 1), None), scalar, const(I32, 0))


def host_has(feature: str) -> bool:
    """Whether numba's target (the host, unless NUMBA_CPU_NAME says otherwise) has this CPU feature."""
    return config.CPU_NAME in (None, "host") and bool(llvm_binding.get_host_cpu_features().get(feature))
