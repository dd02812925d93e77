"""Kernels of the 32-weight block types against Q8_0 activations: Q8_0, Q4_0, Q5_0 (w = d * (q - offset))
and Q4_1, Q5_1 (w = d * q + m).

A block's value is its exact integer dot S = (q - offset) . x_q, the offset term taken off as offset times
the activations' block sum of x_q, as ggml's reference vec_dot sums a block; then lane (block % 8) of the
token's accumulator takes fma(d_w * d_x, S, lane), and for the types with a minimum fma(m_w, d_x * sum x_q,
lane). A call takes 8 blocks, or 4, or 1 at a row's end. The activations hold each group of 8 (and of 4)
blocks transposed by runs of 4 bytes (activations.py), and a call transposes its blocks' quants the same way
once, in registers: run i of every block is then one vector, 8 int8 dots give every block's S in its own
lane, and the float work is one fma per token for the call's blocks.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kinetic_cpu.kernels import decoders, dots, halves, ir
from kinetic_cpu.kernels.ir import F32, I32, I64
from kinetic_cpu.kernels.kernel import Kernel, step_intrinsic

RUNS = 8  # runs of 4 bytes in a block of 32


class _Spec(NamedTuple):
    decode: Callable  # (builder, block i8*) -> <32 x i8> quants
    size: int  # bytes per block: an f16 d at byte 0 and, with has_min, an f16 m at byte 2
    signed: bool = False  # quants are int8 (else unsigned bytes)
    offset: int = 0  # w = d * (q - offset)
    has_min: bool = False  # w = d * q + m


def _transposed(builder, rows: list) -> list:
    """The columns of a square matrix of int32 lanes given as its n rows (<n x i32>): block swaps at every
    scale, log2(n) rounds of n shuffles."""
    n, rows, h = len(rows), list(rows), len(rows) // 2
    while h:
        for r in (r for r in range(n) if not r & h):
            low = ir.indices([c if not c & h else n + c - h for c in range(n)])
            high = ir.indices([c + h if not c & h else n + c for c in range(n)])
            rows[r], rows[r + h] = (builder.shuffle_vector(rows[r], rows[r + h], low),
                                    builder.shuffle_vector(rows[r], rows[r + h], high))  # fmt: skip
        h //= 2
    return rows


def _runs(builder, blocks: list) -> list:
    """The 8 <4n x i8> vectors of n blocks' <32 x i8> quants whose run l of 4 bytes is run i of block l."""
    n = len(blocks)
    words = [builder.bitcast(q, ir.vector(I32, RUNS)) for q in blocks]
    runs = []
    for first in range(0, RUNS, n):  # RUNS / n square matrices: runs first .. first + n - 1 of every block
        part = ir.indices(range(first, first + n))
        runs += _transposed(builder, [builder.shuffle_vector(w, w, part) for w in words])
    return [builder.bitcast(r, ir.vector(ir.I8, 4 * n)) for r in runs]


def _blocks(spec: _Spec, n: int):
    """The intrinsic taking n blocks (8, 4 or 1) of the type spec describes."""
    lanes, words = ir.vector(F32, n), ir.vector(I32, n)

    def body(step):
        b = step.builder
        flip = spec.signed and dots.VNNI  # vpdpbusd wants unsigned quants: q + 128, less 128 . sum x_q
        offset = 128 if flip else spec.offset
        signed = spec.signed and not flip

        def quants(j):  # block j's <32 x i8> quants
            q = spec.decode(b, b.gep(step.weights, [ir.const(I64, j * spec.size)]))
            return b.xor(q, ir.const(q.type, -128)) if flip else q

        blocks = [quants(j) for j in range(n)]
        runs = _runs(b, blocks) if n > 1 else blocks
        d_w = halves.gather_f16(b, step.weights, 0, spec.size, n)
        m_w = halves.gather_f16(b, step.weights, 2, spec.size, n) if spec.has_min else None

        def dot(x, sum_x):  # <n x i32>: each block's S
            if n == 1:
                total = dots.int_sum(b, dots.quad_sums(b, runs[0], ir.load_bytes(b, x, 0, 32), signed))
                sums = ir.as_lanes(b, total)
            else:
                sums = ir.const(words, 0)
                for i, run in enumerate(runs):
                    sums = dots.quad_sums(b, run, ir.load_bytes(b, x, 4 * n * i, 4 * n), signed, into=sums)
            return b.sub(sums, b.mul(sum_x, ir.const(words, offset))) if offset else sums

        with step.tokens() as t:
            d_x = ir.load(b, step.activation(1, t, step.s), 0, lanes)
            sum_x = ir.load(b, step.activation(2, t, step.s), 0, words)
            sums = b.sitofp(dot(step.activation(0, t, step.times_s(32)), sum_x), lanes)

            def update(acc):
                acc = ir.fma(b, b.fmul(d_w, d_x), sums, acc)
                return ir.fma(b, m_w, b.fmul(d_x, b.sitofp(sum_x, lanes)), acc) if spec.has_min else acc

            step.accumulate(t, n, update)

    return step_intrinsic(body)


def _kernel(spec: _Spec) -> Kernel:
    return Kernel(_blocks(spec, RUNS), _blocks(spec, 1), RUNS, "q8_0", half=_blocks(spec, RUNS // 2))


def _q8_0(builder, block):
    return ir.load_bytes(builder, block, 2, 32)


SPECS = {
    "Q8_0": _Spec(_q8_0, 34, signed=True),
    "Q4_0": _Spec(decoders.nibble_block(2), 18, offset=8),
    "Q4_1": _Spec(decoders.nibble_block(4), 20, has_min=True),
    "Q5_0": _Spec(decoders.nibble_block(6, 2), 22, offset=16),
    "Q5_1": _Spec(decoders.nibble_block(8, 4), 24, has_min=True),
}
KERNELS = {name: _kernel(spec) for name, spec in SPECS.items()}
