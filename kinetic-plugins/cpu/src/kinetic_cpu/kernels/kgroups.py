"""K-quant products with 16 rows in the vector lanes (Q4_K, Q5_K, Q6_K), for CPUs without AMX tiles.

At load (interleave) each 16 rows of a matrix are laid out super-block by super-block, in as many bytes as the
file gives them: a super-block s of rows g .. g + 15 is one record of 16 times the type's block size,

    d       16 f16, a row each
    dmin    16 f16 (Q4_K, Q5_K)
    scales  the file's scale bytes, byte b of row r at 16b + r (12 packed 6-bit scales and minimums;
            Q6_K's 16 int8)
    nibbles 32 loads of 64 bytes: byte 4r + i of load p holds weight 8p + i of row r in its low nibble
            and weight 8p + 4 + i in its high one
    highs   the bits above the nibble: Q5_K 8 loads of 64 bytes, bit b of byte 4r + i of load p for weight
            32p + 4b + i; Q6_K 16 loads, bits 2b, 2b + 1 of byte 4r + i of load p for weight 16p + 4b + i

so that one 64-byte vector holds 4 weights of each of 16 rows (a quad), and a vpdpbusd of it against 4 of a
token's activations, broadcast, adds the 16 rows' 4 products into their lanes (dots.quad_sums: pmaddubsw and
pmaddwd on 32 bytes at a time where the CPU has no AVX-512 VNNI): no horizontal sums, and each
weight decoded once for up to TOKENS tokens. The values are kquants.py's bit for bit: a super-block's I and M
are the same exact integers, and lane s % 8 of each (row, token) takes the same two fmas in the same order;
the 8 lanes are summed in kernel.lanes_sum's tree.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from llvmlite import ir as llvm
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from kinetic_cpu.kernels import dots, halves, ir, kquants
from kinetic_cpu.kernels.bitfields import concat, field
from kinetic_cpu.kernels.ir import F32, I16, I32, I64

GROUP = 16  # rows a record holds: 16 lanes of int32 fill a 64-byte vector
TOKENS = 4  # tokens a call takes at most: 4 accumulators of sums and 4 of I beside a run's 8 decoded quads (at 8
# they no longer fit the 32 vector registers)
PREFETCH = 4096  # bytes ahead of a record that the caches are asked for as it is read
SUFFIX = "x16"  # a laid-out matrix's record name: the type's name and this


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
    "Q6_K": _Layout(210, 16, 16, _q6_k_scales, high_bits=2, offset=32, signed_scales=True, mins=False),
}


def takes(name: str) -> bool:
    """Whether a matrix of this type is laid out in groups of 16 rows (its last group made whole with zero rows)."""
    return name in LAYOUTS


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
def _interleave(weight, out, places):  # weight, out: [rows, row_bytes] uint8; places: _places()
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


def interleave(weight: np.ndarray, name: str, out: np.ndarray) -> None:  # weight: [rows, row_bytes] uint8
    """out ([rows rounded up to whole groups, row_bytes] uint8) = weight laid out in groups of 16 rows (module
    docstring), the rows after the last whole group with zero rows after them (their products are never kept)."""
    layout = LAYOUTS[name]
    d_at, dmin_at, scale_from = (208, -1, 192) if name == "Q6_K" else (0, 2, 4)
    places = np.array([layout.block_size, layout.high_bits, d_at, dmin_at, scale_from, layout.scale_bytes,
                       layout.scales_at, layout.nibbles_at, layout.highs_at], np.int64)
    whole = len(weight) // GROUP * GROUP
    _interleave(_read_only(weight[:whole]), out[:whole], places)
    if whole < len(weight):
        last = np.zeros((GROUP, weight.shape[1]), np.uint8)
        last[: len(weight) - whole] = weight[whole:]
        _interleave(_read_only(last), out[whole:], places)


def _read_only(weight: np.ndarray) -> np.ndarray:
    """A read-only view: a file's map is read-only, and one compiled specialization takes every weight."""
    view = weight.view()
    view.flags.writeable = False
    return view


def _layout_of(w_type) -> _Layout:
    return LAYOUTS[ir.record_name(w_type).removesuffix(SUFFIX)]


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


def _exact(builder, record: _Record, xs: list, sums: list) -> tuple[list, list]:
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


def _lanes_sum(builder, lanes: list):
    """kernel.lanes_sum's tree over 8 vectors."""
    pair = builder.fadd
    return pair(pair(pair(lanes[0], lanes[4]), pair(lanes[2], lanes[6])),
                pair(pair(lanes[1], lanes[5]), pair(lanes[3], lanes[7])))


def _tokens(n_tokens: int):
    """The intrinsic (w, row, acts, first, out) -> None: out[first + t, row .. row + 15] for t < n_tokens (the
    columns out has, where it ends before row + 16), rows row .. row + 15 of w (laid out by interleave) against
    the Q8_K activations acts."""

    @intrinsic
    def group_tokens(typingctx, w, row, acts, first, out):
        layout = _layout_of(w)

        def codegen(context, builder, signature, args):
            w_type, _, acts_type, _, out_type = signature.args
            w_value, row_value, acts_value, first_value, out_value = args
            floats = ir.vector(F32, GROUP)
            steps = cgutils.unpack_tuple(builder, context.make_array(w_type)(context, builder, w_value).shape, 2)[1]
            record_bytes = GROUP * layout.block_size
            group_at = ir.byte_pointer(context, builder, w_type, w_value,
                                       builder.mul(builder.mul(row_value, steps), ir.const(I64, layout.block_size)))
            tokens = [builder.add(first_value, ir.const(I64, t)) for t in range(n_tokens)]
            acts = [ir.member(builder, acts_type, acts_value, i) for i in range(3)]
            starts = [[ir.row_pointer(context, builder, *acts[i], t, ir.const(I64, 0)) for t in tokens] for i in range(3)]
            lanes = cgutils.alloca_once(builder, llvm.ArrayType(floats, 8 * n_tokens))
            for i in range(8 * n_tokens):
                builder.store(ir.const(floats, 0.0), builder.gep(lanes, [ir.const(I32, 0), ir.const(I32, i)]))
            with cgutils.for_range(builder, steps) as loop:
                s = loop.index
                record_at = builder.gep(group_at, [builder.mul(s, ir.const(I64, record_bytes))])
                for line in range(0, record_bytes, 64):
                    ir.prefetch_line(builder, builder.gep(record_at, [ir.const(I64, PREFETCH + line)]))
                record = _Record(builder, layout, record_at)
                xs = [builder.gep(p, [builder.mul(s, ir.const(I64, 256))]) for p in starts[0]]
                sums = [builder.gep(p, [builder.mul(s, ir.const(I64, 64))]) for p in starts[2]]
                exact, minimums = _exact(builder, record, xs, sums)
                d_w = record.d(0)
                dmin_w = record.d(1) if minimums is not None else None
                lane = builder.trunc(builder.urem(s, ir.const(I64, 8)), I32)
                for t in range(n_tokens):
                    d_x = ir.splat(builder, ir.load(builder, builder.gep(starts[1][t], [builder.mul(s, ir.const(I64, 4))]),
                                                    0, F32), GROUP)
                    at = builder.gep(lanes, [ir.const(I32, 0), builder.add(lane, ir.const(I32, 8 * t))])
                    total = ir.fma(builder, builder.fmul(d_w, d_x), builder.sitofp(exact[t], floats), builder.load(at))
                    if minimums is not None:
                        scale = builder.fneg(builder.fmul(dmin_w, d_x))
                        total = ir.fma(builder, scale, builder.sitofp(minimums[t], floats), total)
                    builder.store(total, at)
            out_shape = context.make_array(out_type)(context, builder, out_value).shape
            left = builder.sub(cgutils.unpack_tuple(builder, out_shape, 2)[1], row_value)  # out's columns from row
            for t, token in enumerate(tokens):
                values = [builder.load(builder.gep(lanes, [ir.const(I32, 0), ir.const(I32, 8 * t + i)]))
                          for i in range(8)]
                total = _lanes_sum(builder, values)
                at = ir.row_pointer(context, builder, out_type, out_value, token, row_value)
                with builder.if_else(builder.icmp_signed(">=", left, ir.const(I64, GROUP))) as (whole, last):
                    with whole:
                        ir.store(builder, total, at, 0)
                    with last:  # the matrix's last group, made whole with zero rows: only its own rows' lanes
                        ir.masked_store(builder, total, at, ir.lanes_below(builder, left, GROUP))
            return context.get_dummy_value()

        return types.none(w, types.intp, acts, types.intp, out), codegen

    return group_tokens


_MANY, _ONE = _tokens(TOKENS), _tokens(1)


@njit(cache=True, nogil=True)
def group_rows(w, r0, r1, acts, out):  # w: interleave's records; out: [n_tokens, rows] float32
    """Rows r0 .. r1 - 1 of out (r0 a multiple of 16), on this thread: each 16 rows against TOKENS tokens at a
    time, then one at a time."""
    n = out.shape[0]
    for row in range(r0, r1, GROUP):
        t = 0
        while t + TOKENS <= n:
            _MANY(w, row, acts, t, out)
            t += TOKENS
        while t < n:
            _ONE(w, row, acts, t, out)
            t += 1
