"""Kernels of the 32-weight block types against Q8_0 activations: Q8_0, Q4_0, Q5_0 (w = d * (q - offset))
and Q4_1, Q5_1 (w = d * q + m).

A step is one block, as in ggml's AVX2 vec_dot: the exact integer sums of its 8 runs of 4 products,
(q - offset) . x_q (offset 8 for Q4_0, 16 for Q5_0), become 8 floats, fused-multiplied by d_w * d_x into
the token's 8 lanes block after block (acc = fma(d, sums, acc), ggml's _mm256_fmadd_ps); with a minimum,
the call's m_w * (d_x * sum x_q), summed in block order, are then added to lane 0. No lane ever crosses
another until the driver's final tree, so the vector work needs no shuffles. A full call takes 8 blocks.
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

        def quant(j):  # block j's <32 x i8> quants, less the offset (to int8, as ggml's kernels do)
            q = spec.decode(b, b.gep(step.weights, [ir.const(I64, j * spec.size)]))
            return b.sub(q, ir.const(q.type, spec.offset)) if spec.offset else q

        def lane(v, j):  # <8 x float>, lane j of v in every lane
            return ir.splat(b, b.extract_element(v, ir.const(I32, j)), 8)

        m_w = halves.gather_f16(b, step.weights, 2, spec.size, n) if spec.has_min else None

        def token(t, dot, d_w):  # dot(j, x_j): <8 x i32>, block j's (q - offset) . x_q, 4 products a lane
            d_x_at = step.activation(1, t, step.s)
            d_x = ir.load(b, d_x_at, 0, vector)
            scales = b.fmul(d_w, d_x)  # each block's d_w * d_x, one product for the call's blocks
            if spec.has_min:
                sum_x = ir.load(b, step.activation(2, t, step.s), 0, ir.vector(I32, n))
                minimums = b.fmul(m_w, b.fmul(d_x, b.sitofp(sum_x, vector)))
            x = step.activation(0, t, step.times_s(32))

            def update(total):
                for j in range(n):
                    sums = dot(j, ir.load_bytes(b, x, 32 * j, 32))
                    total = ir.fma(b, lane(scales, j), b.sitofp(sums, lanes), total)
                if not spec.has_min:
                    return total
                call = b.extract_element(minimums, ir.const(I32, 0))
                for j in range(1, n):  # the call's minimums summed in block order, then added to lane 0
                    call = b.fadd(call, b.extract_element(minimums, ir.const(I32, j)))
                first = b.fadd(b.extract_element(total, ir.const(I32, 0)), call)
                return b.insert_element(total, first, ir.const(I32, 0))

            step.accumulate(t, update)

        def one(t):
            token(t, lambda j, x_j: dots.quad_sums(b, quant(j), x_j, signed),
                  halves.gather_f16(b, step.weights, 0, spec.size, n))

        def several():  # decode every block once (with its bias correction, see dots), then each token
            quants, d_w = [quant(j) for j in range(n)], halves.gather_f16(b, step.weights, 0, spec.size, n)
            biased = signed and dots.VNNI
            corrections = [dots.bias_correction(b, q) for q in quants] if biased else None

            def dot(j, x_j):
                if biased:
                    return dots.biased_quad_sums(b, corrections[j], quants[j], x_j)
                return dots.quad_sums(b, quants[j], x_j, signed)

            with step.tokens() as t:
                token(t, dot, d_w)

        step.by_batch_size(one, several)

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
