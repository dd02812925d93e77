"""The feed-forward gates in IR: SiLU (Elfwing et al., 2017) or tanh-approximated GELU (Hendrycks and
Gimpel, 2016) of g, times u, in float64, eight values a vector.

GELU's 0.5 x (1 + tanh y) is taken as x / (1 + e^-2y), a sigmoid with one exp (exponential.exp):
y = sqrt(2 / pi) (x + 0.044715 x^3). Each step is one IEEE operation, so an output depends on its inputs
alone.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from kinetic_cpu.kernels import exponential, ir
from kinetic_cpu.kernels.ir import F32, F64, I64

LANES = 8
FLOATS, DOUBLES = ir.vector(F32, LANES), ir.vector(F64, LANES)
TWO_SQRT_2_OVER_PI = 1.5957691216057308


def _sigmoid_argument(builder, x, gelu: bool):
    """-x for SiLU; for GELU -2y = -1.5957691216057308 * (x + ((0.044715 * x) * x) * x)."""
    if not gelu:
        return builder.fneg(x)
    cube = builder.fmul(builder.fmul(builder.fmul(ir.const(DOUBLES, 0.044715), x), x), x)
    return builder.fmul(ir.const(DOUBLES, -TWO_SQRT_2_OVER_PI), builder.fadd(x, cube))


def _gate_loop(context, builder, args_types, args, gelu: bool) -> None:
    (g_type, u_type, _, out_type), (g, u, _, out) = args_types, args
    n = cgutils.unpack_tuple(builder, context.make_array(g_type)(context, builder, g).shape, 1)[0]

    def emit(start, mask):
        at = builder.mul(start, ir.const(I64, 4))

        def load(array_type, array):
            pointer = ir.byte_pointer(context, builder, array_type, array, at)
            return builder.fpext(ir.load_lanes(builder, pointer, FLOATS, mask), DOUBLES)

        x = load(g_type, g)
        e = exponential.exp(builder, _sigmoid_argument(builder, x, gelu))
        value = builder.fmul(builder.fdiv(x, builder.fadd(ir.const(DOUBLES, 1.0), e)), load(u_type, u))
        ir.store_lanes(builder, builder.fptrunc(value, FLOATS), ir.byte_pointer(context, builder, out_type, out, at), mask)

    ir.over_vectors(builder, n, LANES, emit, unroll=4)


def activation(gelu: bool) -> np.ndarray:
    """The token (ir.token) telling gate, as it compiles, which function to take, so that a model's kernels
    hold only the loop it uses."""
    return ir.token("gelu" if gelu else "silu")


@intrinsic
def gate(typingctx, g, u, token, out):
    """out = float32(x / (1 + e^(sigmoid argument)) * u), x = g, all in float64: g, u, out contiguous 1-D
    float32 of one length; token: activation(gelu)."""
    gelu = ir.record_name(token) == "gelu"

    def codegen(context, builder, signature, args):
        _gate_loop(context, builder, signature.args, args, gelu)
        return context.get_dummy_value()

    return types.none(g, u, token, out), codegen
