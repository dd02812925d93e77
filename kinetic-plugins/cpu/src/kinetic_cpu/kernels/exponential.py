"""exp of float64 vectors in IR, without a libm call (attention's softmax, gates).

exp(x) = 2^k * exp(r), k = rint(x / ln 2), r = x - k ln 2 in two parts (Cody and Waite, 1980: k * LN2_HI is
exact), |r| <= ln(2)/2, exp(r) by its Taylor series to r^13 (the rest is under 5e-18 relative); 2^k is
applied as two powers, each a normal float64, so results that underflow to subnormals round once more than
libm's at worst. Within 2 ulp of libm's exp; every step is one IEEE operation (no fused multiply-adds), so
it is a pure function of x: every caller gets the same bits for the same input whatever the batch.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.ir import F64, I64, const

INV_LN2 = 1.4426950408889634
LN2_HI = 0.6931471803691238  # ln 2 to 32 bits: k * LN2_HI is exact for |k| < 2^21
LN2_LO = 1.9082149292705877e-10  # ln 2 - LN2_HI
TAYLOR = tuple(1.0 / np.prod(np.arange(1.0, n + 1)) for n in range(13, -1, -1))  # 1/13!, ..., 1/1!, 1


def _power_of_two(builder, k) -> llvm.Value:  # k: <n x i64> in [-1022, 1023]
    return builder.bitcast(builder.shl(builder.add(k, const(k.type, 1023)), const(k.type, 52)), ir.vector(F64, k.type.count))


def exp(builder, x) -> llvm.Value:
    """e^x lane by lane for <n x double> x: inf above 709.78, 0 below -745.2, NaN for NaN."""
    ty = x.type
    above, below = builder.fcmp_ordered(">", x, const(ty, 710.0)), builder.fcmp_ordered(">", x, const(ty, -746.0))
    clamped = builder.select(above, const(ty, 710.0), builder.select(below, x, const(ty, -746.0)))  # NaN: -746
    k = ir.call_intrinsic(builder, f"llvm.rint.v{ty.count}f64", ty, builder.fmul(clamped, const(ty, INV_LN2)))
    r = builder.fsub(builder.fsub(clamped, builder.fmul(k, const(ty, LN2_HI))), builder.fmul(k, const(ty, LN2_LO)))
    p = const(ty, TAYLOR[0])
    for c in TAYLOR[1:]:
        p = builder.fadd(builder.fmul(p, r), const(ty, c))
    n = builder.fptosi(k, ir.vector(I64, ty.count))
    half = builder.ashr(n, const(n.type, 1))
    value = builder.fmul(builder.fmul(p, _power_of_two(builder, half)), _power_of_two(builder, builder.sub(n, half)))
    return builder.select(builder.fcmp_ordered("==", x, x), value, x)
