"""float16 and bfloat16 weights and scales to float32, exactly, in IR."""

from __future__ import annotations

import llvmlite.binding as llvm_binding
from llvmlite import ir as llvm
from numba.core import config

from kinetic_cpu.kernels.ir import F32, I16, I32, const, host_has, load, vector


def _native_half() -> bool:
    """Whether the target converts half to float in hardware (x86 F16C, ARM64)."""
    arm64 = llvm_binding.get_process_triple().startswith(("aarch64", "arm64"))
    return (arm64 and config.CPU_NAME in (None, "host")) or host_has("f16c")


NATIVE_HALF = _native_half()


def gather_f16(builder, pointer, offset: int, stride: int, n: int) -> llvm.Value:
    """<n x float> of the f16 values at offset, offset + stride, ... (one per block)."""
    bits = llvm.Constant(vector(I16, n), None)
    for j in range(n):
        bits = builder.insert_element(bits, load(builder, pointer, offset + stride * j, I16), const(I32, j))
    return f16_to_f32(builder, bits)


def f16_to_f32(builder, h) -> llvm.Value:
    """IEEE half bits (<n x i16>) to float, exactly."""
    n = h.type.count
    if NATIVE_HALF:
        return builder.fpext(builder.bitcast(h, vector(llvm.HalfType(), n)), vector(F32, n))
    return _f16_to_f32_integer(builder, h, vector(I32, n), vector(F32, n))


def _f16_to_f32_integer(builder, h, wide, real) -> llvm.Value:
    """Normals rebias, subnormals scale from an exact integer, inf/NaN keep their payload; needs no F16C and
    no particular denormal mode."""
    bits = builder.zext(h, wide)
    sign = builder.shl(builder.and_(bits, const(wide, 0x8000)), const(wide, 16))
    magnitude = builder.and_(bits, const(wide, 0x7FFF))
    shifted = builder.shl(magnitude, const(wide, 13))
    normal = builder.add(shifted, const(wide, 112 << 23))
    special = builder.or_(shifted, const(wide, 0x7F800000))
    subnormal = builder.bitcast(builder.fmul(builder.uitofp(magnitude, real), const(real, 2.0**-24)), wide)
    is_subnormal = builder.icmp_unsigned("<", magnitude, const(wide, 0x400))
    is_special = builder.icmp_unsigned(">=", magnitude, const(wide, 0x7C00))
    value = builder.select(is_subnormal, subnormal, builder.select(is_special, special, normal))
    return builder.bitcast(builder.or_(value, sign), real)


def bf16_to_f32(builder, h) -> llvm.Value:
    n = h.type.count
    return builder.bitcast(builder.shl(builder.zext(h, vector(I32, n)), const(vector(I32, n), 16)), vector(F32, n))
