"""Kernels of the 32-weight block types against Q8_0 activations: Q8_0, Q4_0, Q5_0 (w = d * q) and Q4_1,
Q5_1 (w = d * q + m).

A step is one block. Its value: the exact integer i = (q - offset) . x_q (offset 8 for Q4_0, 16 for Q5_0,
taken as offset * sum x_q), then (d_w * d_x) * i, plus, with a minimum, m_w * (d_x * sum x_q), as ggml's
vec_dot does with Q8_0/Q8_1 activations. A full call takes 8 blocks: their 8 integer sums come out as the
lanes of one vector, so the float work is one vector operation each.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kinetic_cpu.kernels import decoders, dots, halves, ir
from kinetic_cpu.kernels.ir import F32, I32, I64
from kinetic_cpu.kernels.kernel import Kernel, step_intrinsic


class _Spec(NamedTuple):
    decode: Callable  # (builder, block i8*) -> <32 x i8> quants
    size: int  # bytes per block: an f16 d at byte 0 and, with has_min, an f16 m at byte 2
    signed: bool = False  # quants are int8 (else unsigned bytes)
    offset: int = 0  # w = d * (q - offset)
    has_min: bool = False  # w = d * q + m


def _integer_sums(builder, quants, x, signed: bool):
    """<n x i32>: lane j = quants[j] . the 32 int8 at x + 32 j."""
    parts = [dots.quad_sums(builder, q, ir.load_bytes(builder, x, 32 * j, 32), signed) for j, q in enumerate(quants)]
    return dots.block_sums(builder, parts) if len(parts) > 1 else ir.as_lanes(builder, dots.int_sum(builder, parts[0]))


def _blocks(spec: _Spec, n: int):
    """The intrinsic taking n blocks (8 or 1) of the type spec describes."""
    vector = ir.vector(F32, n)

    def body(step):
        b = step.builder
        quants = [spec.decode(b, b.gep(step.weights, [ir.const(I64, j * spec.size)])) for j in range(n)]
        d_w = halves.gather_f16(b, step.weights, 0, spec.size, n)
        m_w = halves.gather_f16(b, step.weights, 2, spec.size, n) if spec.has_min else None
        with step.tokens() as t:
            d_x = ir.load(b, step.activation(1, t, step.s), 0, vector)
            sum_x = ir.load(b, step.activation(2, t, step.s), 0, ir.vector(I32, n))
            exact = _integer_sums(b, quants, step.activation(0, t, step.times_s(32)), spec.signed)
            if spec.offset:
                exact = b.sub(exact, b.mul(sum_x, ir.const(sum_x.type, spec.offset)))
            value = b.fmul(b.fmul(d_w, d_x), b.sitofp(exact, vector))
            if spec.has_min:
                value = b.fadd(value, b.fmul(m_w, b.fmul(d_x, b.sitofp(sum_x, vector))))
            step.add(t, n, value)

    return step_intrinsic(body)


def _kernel(spec: _Spec) -> Kernel:
    return Kernel(_blocks(spec, 8), _blocks(spec, 1), 8, "q8_0")


def _q8_0(builder, block):
    return ir.load_bytes(builder, block, 2, 32)


KERNELS = {
    "Q8_0": _kernel(_Spec(_q8_0, 34, signed=True)),
    "Q4_0": _kernel(_Spec(decoders.nibble_block(2), 18, offset=8)),
    "Q4_1": _kernel(_Spec(decoders.nibble_block(4), 20, has_min=True)),
    "Q5_0": _kernel(_Spec(decoders.nibble_block(6, 2), 22, offset=16)),
    "Q5_1": _kernel(_Spec(decoders.nibble_block(8, 4), 24, has_min=True)),
}
