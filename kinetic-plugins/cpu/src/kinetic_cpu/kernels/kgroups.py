"""The K-quants (Q4_K, Q5_K, Q6_K) laid out 16 rows to a record for groups.py's products.

A super-block s of rows g .. g + 15 is one record of 16 times the type's block size,

    d       16 f16, a row each
    dmin    16 f16 (Q4_K, Q5_K)
    scales  the file's scale bytes, byte b of row r at 16b + r (12 packed 6-bit scales and minimums;
            Q6_K's 16 int8)
    nibbles 32 loads of 64 bytes: byte 4r + i of load p holds weight 8p + i of row r in its low nibble
            and weight 8p + 4 + i in its high one
    highs   the bits above the nibble: Q5_K 8 loads of 64 bytes, bit b of byte 4r + i of load p for weight
            32p + 4b + i; Q6_K 16 loads, bits 2b, 2b + 1 of byte 4r + i of load p for weight 16p + 4b + i

and a quad's vpdpbusd (dots.quad_sums: pmaddubsw and pmaddwd on 32 bytes at a time where the CPU has no
AVX-512 VNNI) takes the Q8_K activations. The values are kquants.py's bit for bit: a super-block's I and M
are the same exact integers, and lane s % 8 of each (row, token) takes the same two fmas in the same order.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np
from numba import njit

from kinetic_cpu.kernels import dots, groups, halves, ir, kquants
from kinetic_cpu.kernels.bitfields import concat, field
from kinetic_cpu.kernels.groups import GROUP
from kinetic_cpu.kernels.ir import F32, I16, I32


def _k4_scales(builder, scales):  # the 12 packed bytes, 16 rows to a vector -> 8 scales and 8 mins, likewise
    packed = [concat(builder, concat(builder, *scales[at : at + 2]), concat(builder, *scales[at + 2 : at + 4]))
              for at in (0, 4, 8)]
    return tuple([builder.shuffle_vector(v, v, ir.indices(range(GROUP * j, GROUP * (j + 1)))) for j in range(8)]
                 for v in kquants.k4_scale_bytes(builder, *packed))


def _q6_k_scales(builder, scales):
    return scales, None


class _Layout(NamedTuple):
    block_size: int  # bytes a row's super-block takes in the file
    run: int  # weights to a scale: 32 or 16
    scale_bytes: int  # a row's scale bytes: 12 or 16
    scales: Callable  # (builder, [<16 x i8> scale byte b]) -> ([runs' scales], [runs' minimums] or None)
    high_bits: int = 0  # bits above the nibble: 1 (Q5_K), 2 (Q6_K)
    offset: int = 0  # w = d * s * (q - offset)
    signed_scales: bool = False
    mins: bool = True
    file_places: tuple[int, int, int] = (0, 2, 4)  # where a file's super-block has d, dmin (-1: none), the scales

    def interleave(self, weight: np.ndarray, out: np.ndarray) -> None:  # both: [whole groups of rows, row_bytes]
        places = np.array([self.block_size, self.high_bits, *self.file_places, self.scale_bytes, self.scales_at,
                           self.nibbles_at, self.highs_at], np.int64)
        _interleave(weight, out, places)

    def updates(self, call: groups.Call) -> list[Callable]:
        """Each token's fma of d_w * d_x by I, and of -dmin_w * d_x by M, as kquants.py's kernels add them."""
        b, floats, n = call.builder, ir.vector(F32, GROUP), len(call.tokens)
        record = _Record(b, self, call.record)
        xs = [call.activation(0, t, call.times_s(256)) for t in range(n)]
        sums = [call.activation(2, t, call.times_s(256 // 16)) for t in range(n)]
        exact, minimums = _exact(b, record, xs, sums)
        d_w = record.d(0)
        dmin_w = record.d(1) if minimums is not None else None

        def update(t: int) -> Callable:
            d_x = ir.splat(b, ir.load(b, call.activation(1, t, call.s), 0, F32), GROUP)

            def added(acc):
                total = ir.fma(b, b.fmul(d_w, d_x), b.sitofp(exact[t], floats), acc)
                if minimums is None:
                    return total
                return ir.fma(b, b.fneg(b.fmul(dmin_w, d_x)), b.sitofp(minimums[t], floats), total)

            return added

        return [update(t) for t in range(n)]

    @property
    def scales_at(self) -> int:
        return 2 * 2 * GROUP if self.mins else 2 * GROUP

    @property
    def nibbles_at(self) -> int:
        return self.scales_at + GROUP * self.scale_bytes

    @property
    def highs_at(self) -> int:
        return self.nibbles_at + 128 * GROUP


LAYOUTS = {
    "Q4_K": _Layout(144, 32, 12, _k4_scales),
    "Q5_K": _Layout(176, 32, 12, _k4_scales, high_bits=1),
    "Q6_K": _Layout(210, 16, 16, _q6_k_scales, high_bits=2, offset=32, signed_scales=True, mins=False,
                    file_places=(208, -1, 192)),
}


@njit(cache=True, nogil=True)
def _file_quants(block, size, high_bits, q):  # block: [size] uint8 of the file; q: [256] uint8
    """The quants of a file's super-block in weight order, as ggml-common.h lays out block_q4_K (high_bits 0),
    block_q5_K (1) and block_q6_K (2)."""
    if high_bits == 2:
        for half in range(2):
            for l in range(32):
                a, b, h = block[64 * half + l], block[64 * half + 32 + l], block[128 + 32 * half + l]
                q[128 * half + l] = (a & 15) | (h & 3) << 4
                q[128 * half + 32 + l] = (b & 15) | (h >> 2 & 3) << 4
                q[128 * half + 64 + l] = (a >> 4) | (h >> 4 & 3) << 4
                q[128 * half + 96 + l] = (b >> 4) | (h >> 6 & 3) << 4
        return
    for pair in range(4):
        for l in range(32):
            v = block[size - 128 + 32 * pair + l]
            q[64 * pair + l], q[64 * pair + 32 + l] = v & 15, v >> 4
            if high_bits == 1:
                h = block[16 + l]
                q[64 * pair + l] |= (h >> (2 * pair) & 1) << 4
                q[64 * pair + 32 + l] |= (h >> (2 * pair + 1) & 1) << 4


@njit(cache=True, nogil=True)  # serial: a parallel loop took 1.3 s longer to compile; Matrix splits the rows
def _interleave(weight, out, places):  # weight, out: [rows, row_bytes] uint8; places: _Layout.interleave's
    size, high_bits, d_at, dmin_at, scale_from, scale_bytes, scales_at, nibbles_at, highs_at = places
    steps, record = weight.shape[1] // size, GROUP * size
    groups = out.reshape((weight.shape[0] // GROUP, steps, record))
    for g in range(groups.shape[0]):
        q = np.empty(256, np.uint8)
        for s in range(steps):
            to = groups[g, s]
            to[nibbles_at:] = 0
            for r in range(GROUP):
                block = weight[GROUP * g + r, size * s : size * (s + 1)]
                for b in range(2):
                    to[2 * r + b] = block[d_at + b]
                    if dmin_at >= 0:
                        to[2 * GROUP + 2 * r + b] = block[dmin_at + b]
                for b in range(scale_bytes):
                    to[scales_at + GROUP * b + r] = block[scale_from + b]
                _file_quants(block, size, high_bits, q)
                per_load = 8 // high_bits if high_bits else 1
                for k in range(256):
                    quad, i = k // 4, 4 * r + k % 4
                    to[nibbles_at + 64 * (quad // 2) + i] |= (q[k] & 15) << (4 * (quad % 2))
                    if high_bits:
                        to[highs_at + 64 * (quad // per_load) + i] |= (q[k] >> 4) << (high_bits * (quad % per_load))


class _Record:
    """One record's parts as IR: the 16 rows' scales, and their quads decoded (each load once)."""

    def __init__(self, builder, layout: _Layout, at):
        self.builder, self.layout, self.at, self._loads = builder, layout, at, {}
        raw = [ir.load_bytes(builder, at, layout.scales_at + GROUP * b, GROUP) for b in range(layout.scale_bytes)]
        words = ir.vector(I32, GROUP)
        widen = builder.sext if layout.signed_scales else builder.zext
        scales, mins = layout.scales(builder, raw)
        self.scales = [widen(v, words) for v in scales]
        self.mins = [widen(v, words) for v in mins] if mins is not None else None

    def _load(self, offset: int):
        if offset not in self._loads:
            self._loads[offset] = ir.load_bytes(self.builder, self.at, offset, 64)
        return self._loads[offset]

    def quad(self, i: int):
        """<64 x i8>: weights 4i .. 4i + 3 of each of the 16 rows, unsigned."""
        layout, b = self.layout, self.builder
        q = field(b, self._load(layout.nibbles_at + 64 * (i // 2)), 4, i % 2)
        if layout.high_bits:
            per_load = 8 // layout.high_bits
            high = field(b, self._load(layout.highs_at + 64 * (i // per_load)), layout.high_bits, i % per_load)
            q = b.or_(q, b.shl(high, ir.const(high.type, 4)))
        return q

    def d(self, which: int):
        """<16 x float>: the rows' d (0) or dmin (1)."""
        bits = ir.load(self.builder, self.at, 2 * GROUP * which, ir.vector(I16, GROUP))
        return halves.f16_to_f32(self.builder, bits)


def _exact(builder, record: _Record, xs: list, sums: list) -> tuple[list, Optional[list]]:
    """Each token's I and M (<16 x i32>, a row a lane) of one record, exact; xs, sums: i8* to each token's
    quants and sums of 16 at the record's super-block."""
    layout, words = record.layout, ir.vector(I32, GROUP)
    zero = ir.const(words, 0)

    def run_sum(t, j):  # the token's sum of x_q over run j
        if layout.run == 16:
            return ir.load(builder, sums[t], 4 * j, I32)
        return builder.add(ir.load(builder, sums[t], 8 * j, I32), ir.load(builder, sums[t], 8 * j + 4, I32))

    exact, quads = [zero] * len(xs), layout.run // 4
    for j in range(256 // layout.run):
        part = [zero] * len(xs)
        for i in range(quads * j, quads * (j + 1)):
            q = record.quad(i)
            for t, x in enumerate(xs):
                four = builder.bitcast(ir.splat(builder, ir.load(builder, x, 4 * i, I32), GROUP), q.type)
                part[t] = dots.quad_sums(builder, q, four, False, into=part[t])
        for t in range(len(xs)):
            if layout.offset:
                offsets = builder.mul(run_sum(t, j), ir.const(I32, layout.offset))
                part[t] = builder.sub(part[t], ir.splat(builder, offsets, GROUP))
            exact[t] = builder.add(exact[t], builder.mul(part[t], record.scales[j]))
    if record.mins is None:
        return exact, None
    minimums = []
    for t in range(len(xs)):
        total = zero
        for j, m in enumerate(record.mins):
            total = builder.add(total, builder.mul(m, ir.splat(builder, run_sum(t, j), GROUP)))
        minimums.append(total)
    return exact, minimums


groups.LAYOUTS.update(LAYOUTS)
