"""Kernels of the 32-weight block types against Q8_0 activations: Q8_0, Q4_0, Q5_0 (w = d * (q - offset)),
Q4_1, Q5_1 (w = d * q + m), and IQ4_NL and MXFP4 (w = d * table[code], d an E8M0 2^(e - 128) for MXFP4).

A block's value is its exact integer dot S = (q - offset) . x_q, the offset term taken off as offset times
the activations' block sum of x_q, as ggml's reference vec_dot sums a block; then lane (block % 8) of the
token's accumulator takes fma(d_w * d_x, S, lane), and for the types with a minimum fma(m_w, d_x * sum x_q,
lane). A call takes 8 blocks, or 4, or 1 at a row's end. The activations hold each group of 8 (and of 4)
blocks transposed by runs of 4 bytes (activations.py), and a matrix keeps its groups the same way, copied
at load (keep_in_runs): a group's bytes hold its blocks' d (and m) side by side, then run i of every block
as one vector, so 8 int8 dots give every block's S in its own lane and the float work is one fma per token
for the call's blocks. Single blocks at a row's end stay raw.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
from llvmlite import ir as llvm
from numba import njit

from kinetic_cpu.kernels import decoders, dots, halves, ir
from kinetic_cpu.kernels.activations import q8_0_group
from kinetic_cpu.kernels.bitfields import field
from kinetic_cpu.kernels.ir import F32, I16, I32
from kinetic_cpu.kernels.kernel import Kernel, step_intrinsic

RUNS = 8  # runs of 4 bytes in a block of 32


class _Spec(NamedTuple):
    size: int  # bytes per block: an f16 d at byte 0 and, with has_min, an f16 m at byte 2 (or an E8M0 d)
    quants_at: int  # where the quants start: 32 int8, or 16 bytes of nibbles (weight j low, j + 16 high)
    nibbles: bool = True
    highs_at: Optional[int] = None  # a little-endian u32 whose bit j is weight j's fifth bit
    signed: bool = False  # quants are int8 (else unsigned bytes)
    offset: int = 0  # w = d * (q - offset)
    has_min: bool = False  # w = d * q + m
    table: Optional[tuple[int, ...]] = None  # the nibbles are codes of these 16 int8 values
    exponent: bool = False  # d is one E8M0 byte, 2^(e - 128) (ggml's GGML_E8M0_TO_FP32_HALF), not an f16

    def decode(self, builder, block) -> llvm.Value:
        """A block's <32 x i8> quants, from its raw bytes (i8*)."""
        if not self.nibbles:
            return ir.load_bytes(builder, block, self.quants_at, 32)
        return self.values(builder, decoders.nibble_block(self.quants_at, self.highs_at)(builder, block))

    def values(self, builder, quants) -> llvm.Value:
        """The quants themselves, or for a type with a table the values their codes name."""
        return quants if self.table is None else decoders.looked_up(builder, quants, self.table)

    @property
    def q_max(self) -> int:
        """The largest quant of the nibble types (unsigned), else 0."""
        if not self.nibbles or self.signed:
            return 0
        return 31 if self.highs_at is not None else 15

    @property
    def scale_bytes(self) -> int:
        return 1 if self.exponent else 2

    def head(self, n: int) -> int:
        """Bytes before a group of n blocks' quants, kept in runs: its d's, then its m's."""
        return self.scale_bytes * n * (2 if self.has_min else 1)


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


def _blocks_of_runs(builder, runs: list) -> list:
    """The n <32 x i8> quants of the blocks whose run vectors (<4n x i8>, run i of block l at 4l) these are:
    8 / n square matrices of int32 transposed back (for the AMX tiles, which take a block's quants whole)."""
    n = runs[0].type.count // 4
    words = [builder.bitcast(run, ir.vector(I32, n)) for run in runs]
    parts = [_transposed(builder, words[first : first + n]) for first in range(0, RUNS, n)]
    blocks = [part[0] for part in zip(*parts)] if n == RUNS else [
        builder.shuffle_vector(low, high, ir.indices(range(RUNS))) for low, high in zip(*parts)]  # fmt: skip
    return [builder.bitcast(block, ir.vector(ir.I8, 32)) for block in blocks]


def _kept_runs(builder, spec: _Spec, group, n: int) -> list:
    """The 8 <4n x i8> run vectors of a group of n blocks kept in runs (keep_in_runs), from its bytes (i8*)."""
    head = spec.head(n)
    if not spec.nibbles:
        return [ir.load_bytes(builder, group, head + 4 * n * i, 4 * n) for i in range(RUNS)]
    packed = [ir.load_bytes(builder, group, head + 4 * n * i, 4 * n) for i in range(RUNS // 2)]
    runs = [field(builder, p, 4, 0) for p in packed] + [field(builder, p, 4, 1) for p in packed]
    if spec.highs_at is None:
        return [spec.values(builder, run) for run in runs]
    plane = ir.load_bytes(builder, group, head + 16 * n, 4 * n)  # bit i of byte p: run i's lane p's fifth bit
    return [builder.or_(run, _fifth_bits(builder, plane, i)) for i, run in enumerate(runs)]


def _fifth_bits(builder, plane, i: int) -> llvm.Value:
    """Run i's fifth bits in place (16 or 0 in each lane): bit i of every byte of plane moved to bit 4, one
    shift and one mask."""
    moved = plane if i == 4 else (builder.shl(plane, ir.const(plane.type, 4 - i)) if i < 4 else
                                  builder.lshr(plane, ir.const(plane.type, i - 4)))
    return builder.and_(moved, ir.const(plane.type, 16))


def scales(builder, spec: _Spec, at, n: int, which: int = 0) -> llvm.Value:
    """<n x float>: the d's (which 0) or m's (1) of n blocks at `at` (i8*), a group kept in runs or a single
    raw block."""
    if spec.exponent:
        return _exponent_scales(builder, ir.load(builder, at, n * which, ir.vector(ir.I8, n)))
    if n == 1:
        return halves.gather_f16(builder, at, 2 * which, spec.size, 1)
    return halves.f16_to_f32(builder, ir.load(builder, at, 2 * n * which, ir.vector(I16, n)))


def _exponent_scales(builder, e) -> llvm.Value:
    """<n x float> 2^(e - 128) of E8M0 bytes e (<n x i8>), exactly: float bits (e - 1) << 23, or for e < 2
    the subnormal 2^-128 << e."""
    wide = ir.vector(I32, e.type.count)
    e = builder.zext(e, wide)
    normal = builder.shl(builder.sub(e, ir.const(wide, 1)), ir.const(wide, 23))
    subnormal = builder.shl(ir.const(wide, 0x00200000), e)
    bits = builder.select(builder.icmp_unsigned("<", e, ir.const(wide, 2)), subnormal, normal)
    return builder.bitcast(bits, ir.vector(F32, e.type.count))


def quants(builder, spec: _Spec, at, n: int) -> list:
    """The <32 x i8> quants of each of n blocks at `at` (i8*), a group kept in runs or a single raw block."""
    return [spec.decode(builder, at)] if n == 1 else _blocks_of_runs(builder, _kept_runs(builder, spec, at, n))


def _blocks(spec: _Spec, n: int):
    """The intrinsic taking n blocks of the type spec describes: a group of 8 or 4 kept in runs, or a single
    raw block."""
    lanes, words = ir.vector(F32, n), ir.vector(I32, n)

    def body(step):
        b = step.builder
        flip = spec.signed and dots.VNNI  # vpdpbusd wants unsigned quants: q + 128, less 128 . sum x_q
        offset = 128 if flip else spec.offset
        signed = spec.signed and not flip

        def flipped(q):
            return b.xor(q, ir.const(q.type, -128)) if flip else q

        def decoded():
            runs = quants(b, spec, step.weights, 1) if n == 1 else _kept_runs(b, spec, step.weights, n)
            return [flipped(run) for run in runs]

        d_w = scales(b, spec, step.weights, n)
        m_w = scales(b, spec, step.weights, n, 1) if spec.has_min else None

        def dot(runs, x, sum_x):  # <n x i32>: each block's S
            if n == 1:
                total = dots.int_sum(b, dots.quad_sums(b, runs[0], ir.load_bytes(b, x, 0, 32), signed))
                sums = ir.as_lanes(b, total)
            else:
                xs = [ir.load_bytes(b, x, 4 * n * i, 4 * n) for i in range(RUNS)]
                sums = dots.summed_quad_sums(b, runs, xs, signed, spec.q_max)
            return b.sub(sums, b.mul(sum_x, ir.const(words, offset))) if offset else sums

        def token(t, runs):
            d_x = ir.load(b, step.activation(1, t, step.s), 0, lanes)
            sum_x = ir.load(b, step.activation(2, t, step.s), 0, words)
            sums = b.sitofp(dot(runs, step.activation(0, t, step.times_s(32)), sum_x), lanes)

            def update(acc):
                acc = ir.fma(b, b.fmul(d_w, d_x), sums, acc)
                return ir.fma(b, m_w, b.fmul(d_x, b.sitofp(sum_x, lanes)), acc) if spec.has_min else acc

            step.accumulate(t, n, update)

        def several():  # decode the runs once, then each token
            runs = decoded()
            with step.tokens() as t:
                token(t, runs)

        step.by_batch_size(lambda t: token(t, decoded()), several)

    return step_intrinsic(body)


def _kernel(spec: _Spec) -> Kernel:
    return Kernel(_blocks(spec, RUNS), _blocks(spec, 1), RUNS, "q8_0", half=_blocks(spec, RUNS // 2))


SPECS = {
    "Q8_0": _Spec(34, 2, nibbles=False, signed=True),
    "Q4_0": _Spec(18, 2, offset=8),
    "Q4_1": _Spec(20, 4, has_min=True),
    "Q5_0": _Spec(22, 6, highs_at=2, offset=16),
    "Q5_1": _Spec(24, 8, highs_at=4, has_min=True),
    "IQ4_NL": _Spec(18, 2, signed=True, table=decoders.IQ4_NL_TABLE),
    "MXFP4": _Spec(17, 1, signed=True, table=decoders.MXFP4_TABLE, exponent=True),
}
KERNELS = {name: _kernel(spec) for name, spec in SPECS.items()}


def keep_in_runs(weight: np.ndarray, name: str, kept: np.ndarray) -> None:  # both: [rows, row_bytes] uint8
    """kept = the raw blocks `weight` with each group of n blocks (whole groups of 8, then one of 4 where 4 or
    more remain: activations.q8_0_group) kept in runs: n d's, n m's, then run i of block l at 4 * (n * i + l)
    (for nibbles, byte run i of 4 holding runs i and i + 4), then the fifth bits as a plane of 4n bytes, bit i
    of byte 4l + j for weight 4i + j of block l (run i's lane 4l + j). Single blocks at a row's end stay as they are."""
    spec = SPECS[name]
    n_blocks, block, groups = weight.shape[1] // spec.size, 0, []
    while block < n_blocks:
        first, width = q8_0_group(block, n_blocks)
        groups += [(first, width)] if width > 1 else []
        block += width
    quant_bytes = 16 if spec.nibbles else 32
    layout = np.array([spec.size, spec.quants_at, quant_bytes, spec.highs_at or -1, spec.scale_bytes,
                       spec.head(1) // spec.scale_bytes])
    read_only = weight.view()  # a file's map is read-only: one compiled specialization takes every weight
    read_only.flags.writeable = False
    _keep_in_runs(read_only, kept, np.array(groups, np.int64).reshape(-1, 2), layout)


@njit(cache=True, nogil=True)  # serial: a parallel loop took 1.1 s longer to compile; Matrix splits the rows
def _keep_in_runs(weight, kept, groups, layout):  # weight, kept: [rows, row_bytes] uint8; groups: [g, 2]
    """kept = weight with each group (first block, n) kept in runs (keep_in_runs); layout: block size, where
    the quants start, their bytes, where the fifth bits start (-1: none), bytes a scale takes, scales per
    block."""
    size, quants_at, quant_bytes, highs_at, width, n_scales = layout
    for r in range(weight.shape[0]):
        for b in range(weight.shape[1]):  # loops, not slices: numba compiles slice assignment slowly
            kept[r, b] = weight[r, b]
        for g in range(groups.shape[0]):
            first, n = groups[g]
            base, head = first * size, width * n * n_scales
            highs = base + head + n * quant_bytes
            for b in range(highs, base + n * size):
                kept[r, b] = 0
            for l in range(n):
                block = base + l * size
                for s in range(width * n_scales):
                    kept[r, base + width * n * (s // width) + width * l + s % width] = weight[r, block + s]
                for i in range(quant_bytes // 4):
                    for j in range(4):
                        kept[r, base + head + 4 * (n * i + l) + j] = weight[r, block + quants_at + 4 * i + j]
                if highs_at >= 0:
                    for q in range(32):  # weight q = 4i + j's fifth bit: bit i of the plane's byte 4l + j
                        bit = (weight[r, block + highs_at + q // 8] >> (q % 8)) & 1
                        kept[r, highs + 4 * l + q % 4] |= bit << (q // 4)
