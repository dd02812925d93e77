"""Kernels of the 32-weight block types against Q8_0 activations: Q8_0, Q4_0, Q5_0 (w = d * (q - offset))
and Q4_1, Q5_1 (w = d * q + m).

A step is one block, as in ggml's AVX2 vec_dot: the exact integer sums of its 8 runs of 4 products,
(q - offset) . x_q (offset 8 for Q4_0, 16 for Q5_0), become 8 floats, fused-multiplied by d_w * d_x into
the token's 8 lanes block after block (acc = fma(d, sums, acc), ggml's _mm256_fmadd_ps); with a minimum,
m_w * (d_x * sum x_q) is then added to lane 0. No lane ever crosses another until the driver's final tree,
so the vector work needs no shuffles. A full call takes 8 blocks.
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


def _blocks(spec: _Spec, n: int):
    """The intrinsic taking n blocks (8 or 1) of the type spec describes."""
    vector, lanes = ir.vector(F32, n), ir.vector(F32, 8)
    signed = spec.signed or spec.offset > 0

    def body(step):
        b = step.builder
        quants = [spec.decode(b, b.gep(step.weights, [ir.const(I64, j * spec.size)])) for j in range(n)]
        if spec.offset:  # to int8, as ggml's kernels do: q - offset
            quants = [b.sub(q, ir.const(q.type, spec.offset)) for q in quants]
        d_w = halves.gather_f16(b, step.weights, 0, spec.size, n)
        d_w_lanes = [ir.splat(b, b.extract_element(d_w, ir.const(I32, j)), 8) for j in range(n)]
        m_w = halves.gather_f16(b, step.weights, 2, spec.size, n) if spec.has_min else None
        with step.tokens() as t:
            d_x_at = step.activation(1, t, step.s)
            if spec.has_min:
                sum_x = ir.load(b, step.activation(2, t, step.s), 0, ir.vector(I32, n))
                minimums = b.fmul(m_w, b.fmul(ir.load(b, d_x_at, 0, vector), b.sitofp(sum_x, vector)))
            x = step.activation(0, t, step.times_s(32))

            def update(total):
                for j, q in enumerate(quants):
                    sums = b.sitofp(dots.quad_sums(b, q, ir.load_bytes(b, x, 32 * j, 32), signed), lanes)
                    scale = b.fmul(d_w_lanes[j], ir.splat(b, ir.load(b, d_x_at, 4 * j, F32), 8))  # d_w * d_x
                    total = ir.fma(b, scale, sums, total)
                    if spec.has_min:
                        first = b.fadd(b.extract_element(total, ir.const(I32, 0)),
                                       b.extract_element(minimums, ir.const(I32, j)))
                        total = b.insert_element(total, first, ir.const(I32, 0))
                return total

            step.accumulate(t, update)

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
