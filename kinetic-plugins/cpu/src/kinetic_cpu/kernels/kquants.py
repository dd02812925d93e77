"""Kernels of the K-quants (super-blocks of 256) against Q8_K activations: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and
IQ4_XS (8 runs of 32, each with a 6-bit scale less 32, its 4-bit codes naming IQ4_NL's int8 values).

A step is one super-block s, whose value is two exact integers: I = the sum over its runs (of 16 or 32
weights, each with its own scale) of s_run * ((q - offset) . x_q), an offset (32 for Q6_K, 4 for Q3_K,
w = s * (q - offset)) coming off as offset * s_run * (sum of x_q in the run); and, for the types with
minimums, M = the sum over runs of m_run * (sum of x_q in the run). Lane s % 8 of the token's accumulator
takes acc = fma(d_w * d_x, I, acc), then acc = fma(-(dmin_w * d_x), M, acc), as the 32-weight block kernels put a
block's value in lane block % 8; the integers are summed in vector lanes first, in any order (they are
exact). One integer per super-block is what tile products give (amx_k.py).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kinetic_cpu.kernels import decoders, dots, halves, ir
from kinetic_cpu.kernels.bitfields import concat, field
from kinetic_cpu.kernels.ir import F32, I16, I32
from kinetic_cpu.kernels.kernel import Kernel, step_intrinsic


def _widen(builder, v, signed: bool = False):
    wide = ir.vector(I32, v.type.count)
    return builder.sext(v, wide) if signed else builder.zext(v, wide)


def _q2_k_scales(builder, block):  # a byte per run of 16: scale in the low nibble, min in the high
    packed = ir.load_bytes(builder, block, 0, 16)
    return _widen(builder, field(builder, packed, 4, 0)), _widen(builder, field(builder, packed, 4, 1))


def _q3_k_scales(builder, block):  # 6-bit scales - 32: low nibbles in bytes 96..103, high crumbs in 104..107
    low = ir.load_bytes(builder, block, 96, 8)
    low = concat(builder, field(builder, low, 4, 0), field(builder, low, 4, 1))
    high = ir.load_bytes(builder, block, 104, 4)
    high = [field(builder, high, 2, i) for i in range(4)]
    high = concat(builder, concat(builder, high[0], high[1]), concat(builder, high[2], high[3]))
    scales = builder.or_(low, builder.shl(high, ir.const(high.type, 4)))
    return _widen(builder, builder.sub(scales, ir.const(scales.type, 32)), signed=True), None


def _k4_scales(builder, block):  # Q4_K/Q5_K: eight 6-bit scales and mins packed in bytes 4..15
    scales, mins = k4_scale_bytes(builder, *(ir.load_bytes(builder, block, at, 4) for at in (4, 8, 12)))
    return _widen(builder, scales), _widen(builder, mins)


def k4_scale_bytes(builder, low, mid, high):
    """Q4_K/Q5_K's 8 scales and 8 mins (unsigned bytes, get_scale_min_k4 in ggml-quants.c) from the 12 packed bytes
    as three vectors of n lanes, bytes 0-3, 4-7 and 8-11 (n = 4: one row; 4m: byte j of m rows at lanes jm ..):
    -> (scales, mins), <2n x i8> each, in the same order."""

    def upper(v, top):  # (v & 15 or v >> 4) | (top >> 6) << 4
        return builder.or_(v, builder.shl(builder.lshr(top, ir.const(top.type, 6)), ir.const(top.type, 4)))

    scales = concat(builder, field(builder, low, 6, 0), upper(field(builder, high, 4, 0), low))
    mins = concat(builder, field(builder, mid, 6, 0), upper(field(builder, high, 4, 1), mid))
    return scales, mins


def _q6_k_scales(builder, block):  # an int8 scale per run of 16 in bytes 192..207
    return _widen(builder, ir.load_bytes(builder, block, 192, 16), signed=True), None


def _iq4_xs_scales(builder, block):  # run r: nibble r % 2 of byte 4 + r / 2, over bits 2r, 2r + 1 of the u16 at 2
    low = ir.load_bytes(builder, block, 4, 4)
    low = builder.shuffle_vector(field(builder, low, 4, 0), field(builder, low, 4, 1),
                                 ir.indices([0, 4, 1, 5, 2, 6, 3, 7]))
    high = ir.load_bytes(builder, block, 2, 2)  # crumb i of byte j: run 4j + i
    high = concat(builder, concat(builder, field(builder, high, 2, 0), field(builder, high, 2, 1)),
                  concat(builder, field(builder, high, 2, 2), field(builder, high, 2, 3)))
    high = builder.shuffle_vector(high, high, ir.indices([0, 2, 4, 6, 1, 3, 5, 7]))
    scales = builder.or_(low, builder.shl(high, ir.const(high.type, 4)))
    return _widen(builder, builder.sub(scales, ir.const(scales.type, 32)), signed=True), None


def _iq4_xs_chunk(builder, block, c: int):  # run c: 16 bytes of codes from byte 8 + 16c, as an IQ4_NL block's
    codes = decoders.nibble_block(8 + 16 * c)(builder, block)
    return decoders.looked_up(builder, codes, decoders.IQ4_NL_TABLE)


def _pair_scales(builder, scales):
    """Per chunk of 32 weights, the <16 x i16> scale of each of its adjacent pairs (runs of 32 or of 16)."""
    n_runs = scales.type.count
    narrow = builder.trunc(scales, ir.vector(I16, n_runs))
    lanes = [[c if n_runs == 8 else 2 * c + p // 8 for p in range(16)] for c in range(8)]
    return [builder.shuffle_vector(narrow, narrow, ir.indices(chunk)) for chunk in lanes]


def _run_sums(builder, sums, n_runs: int):  # sums: <16 x i32> of x_q per 16 -> per run
    return sums if n_runs == 16 else _eight(builder, sums)


def _eight(builder, v):  # <8 or 16 x i32> -> <8 x i32>: adjacent lanes added when there are 16
    return v if v.type.count == 8 else dots.fold_pairs(builder, v)


class _Spec(NamedTuple):
    decode: Callable  # (builder, block i8*, chunk c) -> <32 x i8> quants of weights 32c .. 32c + 31
    scales: Callable  # (builder, block i8*) -> (<runs x i32> scales, <runs x i32> mins or None)
    runs: int  # runs of weights with a scale of their own: 8 of 32 or 16 of 16
    d_at: int  # byte offset of the f16 d
    dmin_at: int = -1  # of the f16 dmin, for the types with minimums
    offset: int = 0  # w = d * s * (q - offset)
    signed: bool = False  # quants are int8 (else unsigned bytes of at most 63)


def _exact(builder, spec: _Spec, quants, pair_scales, scales, x, run_sums):
    """I (i32) of one token (module docstring), exact: the products' lanes summed, less the offset term;
    quants(c): chunk c's quants. Where dots.WIDE, two chunks a product (unsigned quants: x86 has no 64-byte
    psign)."""
    width = 2 if dots.WIDE and not spec.signed else 1
    total = None
    for c in range(0, 8, width):
        q, scale = (quants(c), pair_scales[c]) if width == 1 else (
            concat(builder, quants(c), quants(c + 1)), concat(builder, pair_scales[c], pair_scales[c + 1]))
        part = dots.scaled_quad_sums(builder, q, ir.load_bytes(builder, x, 32 * c, 32 * width), scale, spec.signed)
        total = part if total is None else builder.add(total, part)
    exact = dots.int_sum(builder, total)
    if spec.offset:
        offsets = dots.int_sum(builder, builder.mul(run_sums, scales))
        exact = builder.sub(exact, builder.mul(offsets, ir.const(I32, spec.offset)))
    return exact


def _super_block(spec: _Spec):
    """The intrinsic taking one super-block of the type spec describes."""
    one = ir.vector(F32, 1)

    def body(step):
        b = step.builder
        scales, mins = spec.scales(b, step.weights)
        pair_scales = _pair_scales(b, scales)
        d_w = halves.gather_f16(b, step.weights, spec.d_at, 0, 1)
        dmin_w = halves.gather_f16(b, step.weights, spec.dmin_at, 0, 1) if mins is not None else None

        def token(t, quants):
            sums = ir.load(b, step.activation(2, t, step.times_s(16)), 0, ir.vector(I32, 16))
            run_sums = _run_sums(b, sums, scales.type.count)
            x = step.activation(0, t, step.times_s(256))
            d_x = ir.load(b, step.activation(1, t, step.s), 0, d_w.type)
            exact = b.sitofp(ir.as_lanes(b, _exact(b, spec, quants, pair_scales, scales, x, run_sums)), one)

            def update(total):
                total = ir.fma(b, b.fmul(d_w, d_x), exact, total)
                if mins is None:
                    return total
                m = b.sitofp(ir.as_lanes(b, dots.int_sum(b, b.mul(run_sums, mins))), one)
                return ir.fma(b, b.fneg(b.fmul(dmin_w, d_x)), m, total)

            step.accumulate(t, 1, update)

        def several():  # decode the chunks once, then each token
            chunks = [spec.decode(b, step.weights, c) for c in range(8)]
            with step.tokens() as t:
                token(t, chunks.__getitem__)

        step.by_batch_size(lambda t: token(t, lambda c: spec.decode(b, step.weights, c)), several)

    return step_intrinsic(body)


def _kernel(spec: _Spec) -> Kernel:
    one = _super_block(spec)
    return Kernel(one, one, 1, "q8_k")


SPECS = {
    "Q2_K": _Spec(decoders.k_chunks((16, 2, 32)), _q2_k_scales, 16, 80, 82),
    "Q3_K": _Spec(decoders.k_chunks((32, 2, 32), (0, 1, 32)), _q3_k_scales, 16, 108, offset=4),
    "Q4_K": _Spec(decoders.k_chunks((16, 4, 32)), _k4_scales, 8, 0, 2),
    "Q5_K": _Spec(decoders.k_chunks((48, 4, 32), (16, 1, 32)), _k4_scales, 8, 0, 2),
    "Q6_K": _Spec(decoders.k_chunks((0, 4, 64), (128, 2, 32)), _q6_k_scales, 16, 208, offset=32),
    "IQ4_XS": _Spec(_iq4_xs_chunk, _iq4_xs_scales, 8, 0, signed=True),
}
KERNELS = {name: _kernel(spec) for name, spec in SPECS.items()}
