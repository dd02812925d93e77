"""Scalar numba intrinsics: float bit casts, atomic counters, waiting hints, a prefetch hint, a pointer from an
address, weight blocks at an address, a call by address and a value stashed for code it calls."""

from __future__ import annotations

import platform
import sys

from numba import types
from numba.core import cgutils
from numba.core.typing.typeof import Purpose, typeof
from numba.extending import intrinsic

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import F32, I8, I16, I32, I64, byte_pointer, const, prefetch_line


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
def arrive(typingctx, counter, count):
    """arrive(counter, count): atomically add count to counter[0] (int64), after every write this thread made
    before it (release), so a thread that sees the sum (load_acquire) sees those writes too."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        builder.atomic_rmw("add", data, args[1], "release")
        return context.get_dummy_value()

    return types.none(counter, types.int64), codegen


@intrinsic
def load_acquire(typingctx, counter):
    """load_acquire(counter) -> int64: counter[0] (int64), read atomically (acquire: the writes that arrive
    published before it are seen after it); never hoisted out of a loop."""

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        value = builder.load_atomic(data, "acquire", 8)
        return value

    return types.int64(counter), codegen


@intrinsic
def spin_pause(typingctx):
    """spin_pause(): a hint that this thread waits in a loop (x86's pause), which spares the core's other
    thread and the memory bus; nothing elsewhere."""

    def codegen(context, builder, signature, args):
        if platform.machine().lower() in ("x86_64", "amd64"):
            pause = llvm.FunctionType(llvm.VoidType(), [])
            builder.call(builder.module.declare_intrinsic("llvm.x86.sse2.pause", fnty=pause), [])
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def yield_thread(typingctx):
    """yield_thread(): give the core to another thread that is ready to run, if any (sched_yield, or
    SwitchToThread on Windows): a waiting thread's way not to hold up the thread it waits for where threads
    outnumber cores."""

    def codegen(context, builder, signature, args):
        name = "SwitchToThread" if sys.platform == "win32" else "sched_yield"
        function = builder.module.globals.get(name) or llvm.Function(builder.module, llvm.FunctionType(I32, []), name)
        builder.call(function, [])
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def blocks_at(typingctx, address, rows, steps, itemsize):
    """blocks_at(address, rows, steps, itemsize) -> the [rows, steps] C-contiguous array of itemsize-byte blocks
    at address, typed as bytes (uint8) but laid out as numba lays out any 2-d C array of blocks: data, shape,
    strides (steps * itemsize, itemsize) and itemsize. Only for call_at to code compiled for an array of block
    records (driver.rows), whose arguments it carries as that array would; the caller keeps the memory alive."""
    array_type = types.Array(types.uint8, 2, "C", readonly=True)

    def codegen(context, builder, signature, args):
        at, n_rows, n_steps, size = args
        array = context.make_array(array_type)(context, builder)
        data = builder.inttoptr(at, context.get_data_type(types.uint8).as_pointer())
        shape = cgutils.pack_array(builder, [n_rows, n_steps])
        strides = cgutils.pack_array(builder, [builder.mul(n_steps, size), size])
        context.populate_array(array, data=data, shape=shape, strides=strides, itemsize=size, meminfo=None)
        return array._getvalue()

    return array_type(types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def prefetch(typingctx, array, offset):
    """prefetch(array, offset): a hint to bring the cache line at byte `offset` of the array's data into the
    caches; it never faults, so it may point past the end."""

    def codegen(context, builder, signature, args):
        prefetch_line(builder, byte_pointer(context, builder, signature.args[0], args[0], args[1]))
        return context.get_dummy_value()

    return types.none(array, types.intp), codegen


@intrinsic
def pointer_at(typingctx, address):
    """pointer_at(int64) -> void pointer: the address as a pointer, which numba.carray views as an array (the
    caller keeps the array there alive)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], I8.as_pointer())

    return types.voidptr(types.int64), codegen


@intrinsic
def stash(typingctx, value):
    """stash(value) -> int64: the address of a copy of value in the calling function's stack frame, valid until it
    returns, for the code it calls to read back (unstash)."""

    def codegen(context, builder, signature, args):
        return builder.ptrtoint(cgutils.alloca_once_value(builder, args[0]), I64)

    return types.int64(value), codegen


STASHED: dict = {}  # the numba type of stashed values, by the name of the token that unstash is compiled for


@intrinsic
def unstash(typingctx, address, token):
    """unstash(int64, token) -> the value stash left at the address, of the type STASHED names by the token's record
    name (ir.token); registered before compiling, as shares.stashed_code does."""
    from kinetic_cpu.kernels.ir import record_name

    value_type = STASHED[record_name(token)]

    def codegen(context, builder, signature, args):
        value = builder.load(builder.inttoptr(args[0], context.get_value_type(value_type).as_pointer()))
        context.nrt.incref(builder, value_type, value)  # a new reference, as every expression's value is
        return value

    return value_type(types.int64, token), codegen


@intrinsic
def call_at(typingctx, address, args):
    """call_at(int64, args): the compiled function at `address` called with the tuple args, by numba's calling
    convention (compiled_address gives such an address). Its code is not linked into the caller's, so compiling
    the caller does not optimize it once more; args must have exactly the types the function was compiled
    for, as nothing here can check them."""

    def codegen(context, builder, signature, llvm_args):
        arg_types = tuple(args)
        function = context.call_conv.get_function_type(types.none, arg_types)
        pointer = builder.inttoptr(llvm_args[0], function.as_pointer())
        values = cgutils.unpack_tuple(builder, llvm_args[1], len(arg_types))
        status, _ = context.call_conv.call_function(builder, pointer, types.none, arg_types, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()

    return types.none(types.int64, args), codegen


def compile_for(dispatcher, args: tuple) -> tuple:
    """dispatcher compiled (or loaded from numba's cache) for the types of args, as a call with args would;
    the signature."""
    signature = tuple(typeof(arg, Purpose.argument) for arg in args)
    dispatcher.compile(signature)
    return signature


def compiled_address(dispatcher, args: tuple) -> int:
    """The address of dispatcher's code compiled (or loaded from numba's cache) for the types of args, for
    call_at."""
    result = dispatcher.overloads[compile_for(dispatcher, args)]
    return result.library.get_pointer_to_function(result.fndesc.llvm_func_name)
