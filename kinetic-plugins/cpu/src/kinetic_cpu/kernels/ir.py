"""LLVM IR basics for the kernels' numba intrinsics: types and constants, pointers into numba arrays,
unaligned loads and stores, a loop over a batch's tokens, what the target CPU has, and names that reach a kernel
as it compiles (token, record_name).

Nothing in the kernels' IR uses fast-math flags: every float operation is the IEEE operation written,
fused multiply-adds included (llvm.fma rounds once, on any target: a libm call where the CPU has no FMA).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager

import llvmlite.binding as llvm_binding
import numpy as np
from llvmlite import ir
from numba.core import cgutils, config

I8, I16, I32, I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)
F32, F64 = ir.FloatType(), ir.DoubleType()


@functools.lru_cache(maxsize=None)
def token(name: str) -> np.ndarray:
    """An argument that tells a kernel `name` as it compiles: an empty array of a record whose one field is so
    named (record_name reads it from the argument's numba type), so each name compiles its own specialization."""
    return np.empty(0, np.dtype([(name, np.uint8)]))


def record_name(array_type) -> str:
    """The name of the one field of a numba array type's records: a token's, or a weight type's (blocks.py)."""
    return next(iter(array_type.dtype.fields))


def vector(element: ir.Type, n: int) -> ir.VectorType:
    return ir.VectorType(element, n)


def const(ty: ir.Type, value) -> ir.Constant:
    """value in every lane of a vector type, or the scalar constant."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [value] * ty.count)
    return ir.Constant(ty, value)


def indices(values) -> ir.Constant:
    return ir.Constant(vector(I32, len(values)), list(values))


def byte_pointer(context, builder, array_type, array, offset=None) -> ir.Value:
    """i8* to byte `offset` (an i64 value; None: 0) of an array's data, whatever its element type."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(builder.bitcast(data, I8.as_pointer()), [const(I64, 0) if offset is None else offset])


def item_pointer(context, builder, array_type, array, index, size: int) -> ir.Value:
    """i8* to item `index` (an i64 value) of an array's data taken as items of `size` bytes."""
    return byte_pointer(context, builder, array_type, array, builder.mul(index, const(I64, size)))


def ceil_div(builder, a, b: int) -> ir.Value:
    """ceil(a / b) for an i64 a >= 0."""
    return builder.sdiv(builder.add(a, const(I64, b - 1)), const(I64, b))


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


def prefetch_line(builder, pointer) -> None:
    """A hint to bring the cache line at an i8* pointer into every cache level, for a read; it never faults."""
    read, keep, data = const(I32, 0), const(I32, 3), const(I32, 1)
    call_intrinsic(builder, "llvm.prefetch", ir.VoidType(), pointer, read, keep, data)


def fma(builder, a, b, c) -> ir.Value:
    """a * b + c rounded once (IEEE fusedMultiplyAdd), lane by lane, for float or double (vectors)."""
    return call_intrinsic(builder, f"llvm.fma.{_mangled(a.type)}", a.type, a, b, c)


def _mangled(ty: ir.Type) -> str:
    """An intrinsic's overload suffix for a float, double or integer scalar or vector type."""
    element = ty.element if isinstance(ty, ir.VectorType) else ty
    name = f"i{element.width}" if isinstance(element, ir.IntType) else "f64" if element == F64 else "f32"
    return f"v{ty.count}{name}" if isinstance(ty, ir.VectorType) else name


def lanes_below(builder, count, n: int) -> ir.Value:
    """<n x i1>: lane i set where i < count (an i64; any value)."""
    return builder.icmp_signed("<", ir.Constant(vector(I64, n), list(range(n))), splat(builder, count, n))


def masked_load(builder, pointer, ty: ir.VectorType, mask) -> ir.Value:
    """ty from an i8* pointer, lanes off in mask read as zero and never touched (no fault past an end)."""
    name = f"llvm.masked.load.{_mangled(ty)}.p0"
    at = builder.bitcast(pointer, ty.as_pointer())
    return call_intrinsic(builder, name, ty, at, const(I32, 1), mask, const(ty, 0))


def masked_store(builder, value, pointer, mask) -> None:
    """The lanes of value that mask sets, to an i8* pointer; the others are left as they are."""
    name = f"llvm.masked.store.{_mangled(value.type)}.p0"
    at = builder.bitcast(pointer, value.type.as_pointer())
    call_intrinsic(builder, name, ir.VoidType(), value, at, const(I32, 1), mask)


def load_lanes(builder, pointer, ty: ir.VectorType, mask=None) -> ir.Value:
    """ty from an i8* pointer: a plain load, or masked_load where a mask is given."""
    return load(builder, pointer, 0, ty) if mask is None else masked_load(builder, pointer, ty, mask)


def store_lanes(builder, value, pointer, mask=None) -> None:
    if mask is None:
        store(builder, value, pointer, 0)
    else:
        masked_store(builder, value, pointer, mask)


def over_vectors(builder, n, lanes: int, emit, unroll: int = 1) -> None:
    """emit(start, mask) for start = 0, lanes, 2 lanes, ... < n (an i64): whole vectors with mask None,
    `unroll` of them in each loop step (independent work the CPU overlaps), then the rest under a mask.
    Plain loads and stores for whole vectors: a masked store would hold up the loads after it."""
    whole = builder.sdiv(n, const(I64, lanes))
    steps = builder.sdiv(whole, const(I64, unroll))
    with cgutils.for_range(builder, steps) as step:
        for u in range(unroll):
            vector_index = builder.add(builder.mul(step.index, const(I64, unroll)), const(I64, u))
            emit(builder.mul(vector_index, const(I64, lanes)), None)
    with cgutils.for_range(builder, builder.sub(whole, builder.mul(steps, const(I64, unroll)))) as extra:
        emit(builder.mul(builder.add(builder.mul(steps, const(I64, unroll)), extra.index), const(I64, lanes)), None)
    start = builder.mul(whole, const(I64, lanes))
    with builder.if_then(builder.icmp_signed("<", start, n)):
        emit(start, lanes_below(builder, builder.sub(n, start), lanes))


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
