"""The 32-weight block types (block32.py: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4) laid out 16 rows to a
record for groups.py's products.

Block s of rows g .. g + 15 is one record of 16 times the type's block size,

    d       16 f16, a row each (MXFP4: 16 E8M0 bytes)
    m       16 f16 (Q4_1, Q5_1)
    quants  Q8_0: 8 loads of 64 bytes, byte 4r + i of load p holding weight 4p + i of row r; the nibble
            types: 4 loads, byte 4r + i of load p holding weight 8p + i in its low nibble and 8p + 4 + i in
            its high one
    highs   Q5_0, Q5_1: 64 bytes, bit p of byte 4r + i the fifth bit of weight 4p + i

and a quad's vpdpbusd takes 4 of a token's Q8_0 activations, wherever activations.q8_0_group put them. The
values are block32.py's bit for bit: a block's S is the same exact integer (signed quants flipped to unsigned
where vpdpbusd wants them, less 128 times the block's sum of x_q), and lane s % 8 of each (row, token) takes
the same fmas in the same order.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from numba import njit

from kinetic_cpu.kernels import block32, dots, groups, ir
from kinetic_cpu.kernels.bitfields import field
from kinetic_cpu.kernels.groups import GROUP
from kinetic_cpu.kernels.ir import F32, I32, I64

QUADS = 8  # 4 weights of each row, 8 to a block


class _Layout(NamedTuple):
    spec: block32._Spec

    @property
    def block_size(self) -> int:
        return self.spec.size

    @property
    def head(self) -> int:
        """Bytes before the quants: the 16 rows' d's, then their m's."""
        return self.spec.head(GROUP)

    @property
    def highs_at(self) -> int:
        return self.head + 64 * (QUADS // 2 if self.spec.nibbles else QUADS)

    def interleave(self, weight: np.ndarray, out: np.ndarray) -> None:  # both: [whole groups of rows, row_bytes]
        spec = self.spec
        places = np.array([spec.size, spec.quants_at, spec.nibbles, -1 if spec.highs_at is None else spec.highs_at,
                           spec.scale_bytes, 2 if spec.has_min else 1, self.head, self.highs_at], np.int64)
        _interleave(weight, out, places)

    def updates(self, call: groups.Call) -> list[Callable]:
        """Each token's fma of d_w * d_x by S (and of m_w by d_x times the block's sum of x_q), as block32.py's
        kernels add them."""
        b, spec, floats, n = call.builder, self.spec, ir.vector(F32, GROUP), len(call.tokens)
        flip = spec.signed and dots.VNNI  # vpdpbusd wants unsigned quants: q + 128, less 128 . sum x_q
        offset = 128 if flip else spec.offset
        quads = [self._quad(b, call.record, p, flip) for p in range(QUADS)]
        places = _x_places(b, call.s, call.steps)
        d_w = block32.scales(b, spec, call.record, GROUP)
        m_w = block32.scales(b, spec, call.record, GROUP, 1) if spec.has_min else None

        def update(t: int) -> Callable:
            exact = None
            for p, q in enumerate(quads):
                four = ir.load(b, call.activation(0, t, places[p]), 0, I32)
                exact = dots.quad_sums(b, q, b.bitcast(ir.splat(b, four, GROUP), q.type), spec.signed and not flip,
                                       into=exact)
            sum_x = ir.splat(b, ir.load(b, call.activation(2, t, call.s), 0, I32), GROUP)
            if offset:
                exact = b.sub(exact, b.mul(sum_x, ir.const(sum_x.type, offset)))
            d_x = ir.splat(b, ir.load(b, call.activation(1, t, call.s), 0, F32), GROUP)

            def added(acc):
                acc = ir.fma(b, b.fmul(d_w, d_x), b.sitofp(exact, floats), acc)
                return ir.fma(b, m_w, b.fmul(d_x, b.sitofp(sum_x, floats)), acc) if spec.has_min else acc

            return added

        return [update(t) for t in range(n)]

    def _quad(self, builder, record, p: int, flip: bool):
        """<64 x i8>: weights 4p .. 4p + 3 of each of the 16 rows (their table's values, flipped to unsigned)."""
        spec = self.spec
        if not spec.nibbles:
            q = ir.load_bytes(builder, record, self.head + 64 * p, 64)
        else:
            q = field(builder, ir.load_bytes(builder, record, self.head + 64 * (p // 2), 64), 4, p % 2)
            if spec.highs_at is not None:
                high = field(builder, ir.load_bytes(builder, record, self.highs_at, 64), 1, p)
                q = builder.or_(q, builder.shl(high, ir.const(high.type, 4)))
            q = spec.values(builder, q)
        return builder.xor(q, ir.const(q.type, -128)) if flip else q


def _x_places(builder, s, steps) -> list:
    """Where quad p of block s is in a token's Q8_0 quants (i64 indices): 32 first + 4 width p + 4 (s - first)
    for block s's group (first, width) of activations.q8_0_group."""
    const = lambda v: ir.const(I64, v)  # noqa: E731
    whole = builder.and_(steps, const(-8))
    in_whole = builder.icmp_signed("<", s, whole)
    in_half = builder.and_(builder.icmp_signed("<", s, builder.add(whole, const(4))),
                           builder.icmp_signed(">=", builder.sub(steps, whole), const(4)))
    first = builder.select(in_whole, builder.and_(s, const(-8)), builder.select(in_half, whole, s))
    width = builder.select(in_whole, const(8), builder.select(in_half, const(4), const(1)))
    base = builder.add(builder.mul(first, const(32)), builder.mul(builder.sub(s, first), const(4)))
    stride = builder.mul(width, const(4))
    return [builder.add(base, builder.mul(stride, const(p))) for p in range(QUADS)]


@njit(cache=True, nogil=True)  # serial, as kgroups' _interleave; Matrix splits the rows
def _interleave(weight, out, places):  # weight, out: [rows, row_bytes] uint8; places: _Layout.interleave's
    size, quants_at, nibbles, highs_at, width, n_scales, head, highs_to = places
    steps, record = weight.shape[1] // size, GROUP * size
    records = out.reshape((weight.shape[0] // GROUP, steps, record))
    for g in range(records.shape[0]):
        for s in range(steps):
            to = records[g, s]
            to[head:] = 0
            for r in range(GROUP):
                block = weight[GROUP * g + r, size * s : size * (s + 1)]
                for j in range(n_scales):  # d, then m where the type has one
                    for b in range(width):
                        to[GROUP * width * j + width * r + b] = block[width * j + b]
                for w in range(32):
                    p, i = w // 4, 4 * r + w % 4
                    if nibbles:
                        q = (block[quants_at + w % 16] >> (4 * (w // 16))) & 15
                        to[head + 64 * (p // 2) + i] |= q << (4 * (p % 2))
                    else:
                        to[head + 64 * p + i] = block[quants_at + w]
                    if highs_at >= 0:
                        to[highs_to + i] |= ((block[highs_at + w // 8] >> (w % 8)) & 1) << p


LAYOUTS = {name: _Layout(spec) for name, spec in block32.SPECS.items()}
groups.LAYOUTS.update(LAYOUTS)
