"""Matrix products with 16 rows in the vector lanes, for CPUs without AMX tiles: the K-quants (kgroups.py) and
the 32-weight block types (bgroups.py).

At load (interleave) each 16 rows of a matrix are laid out step by step (a K-quant's super-block, a 32-weight
block), in as many bytes as the file gives them: step s of rows g .. g + 15 is one record of 16 times the
type's block size, which its family's module describes. One 64-byte vector of a record holds 4 weights of each
of the 16 rows (a quad), and a vpdpbusd of it against 4 of a token's activations, broadcast, adds the 16 rows'
4 products into their lanes: no horizontal sums, and each weight decoded once for up to TOKENS tokens.

A layout (LAYOUTS, filled by the two families' modules) gives, for one record, each token's update of its
accumulator lane s % 8 (<16 x float>, a row a lane); the 8 lanes are summed in kernel.lanes_sum's tree. Each
family's values are those of its step kernels (block32.py, kquants.py) bit for bit.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np
from llvmlite import ir as llvm
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.ir import F32, I32, I64

GROUP = 16  # rows a record holds: 16 lanes of int32 fill a 64-byte vector
TOKENS = 4  # tokens a call takes at most: their accumulators beside a record's decoded quads (at 8 they no
# longer fit the 32 vector registers)
PREFETCH = 4096  # bytes ahead of a record that the caches are asked for as it is read
SUFFIX = "x16"  # a laid-out matrix's record name: the type's name and this


class Call:
    """One call of the group kernel at step s, as IR: the record's pointer and the tokens' activations."""

    def __init__(self, context, builder, acts_type, acts, tokens: list, record, s, steps):
        self.context, self.builder = context, builder
        self._acts_type, self._acts, self.tokens = acts_type, acts, tokens
        self.record, self.s, self.steps = record, s, steps  # i8*, i64, i64

    def activation(self, i: int, t: int, index):
        """i8* to acts[i][token t of the call, index] (an i64 value)."""
        array_type, array = ir.member(self.builder, self._acts_type, self._acts, i)
        return ir.row_pointer(self.context, self.builder, array_type, array, self.tokens[t], index)

    def times_s(self, n: int):
        return self.builder.mul(self.s, ir.const(I64, n))


class Layout(Protocol):
    block_size: int  # bytes a row's step takes in the file

    def interleave(self, weight: np.ndarray, out: np.ndarray) -> None:  # both: [whole groups of rows, row_bytes]
        """out = weight laid out 16 rows to a record."""

    def updates(self, call: Call) -> list[Callable]:
        """For each token of the call, acc -> acc + the record's value (IR, <16 x float>)."""


LAYOUTS: dict[str, Layout] = {}  # by weight type name, as kgroups.py and bgroups.py register them


def takes(name: str) -> bool:
    """Whether a matrix of this type is laid out in groups of 16 rows (its last group made whole with zero rows)."""
    return name in LAYOUTS


def interleave(weight: np.ndarray, name: str, out: np.ndarray) -> None:  # weight: [rows, row_bytes] uint8
    """out ([rows rounded up to whole groups, row_bytes] uint8) = weight laid out in groups of 16 rows, the rows
    after the last whole group with zero rows after them (their products are never kept)."""
    layout = LAYOUTS[name]
    whole = len(weight) // GROUP * GROUP
    layout.interleave(read_only(weight[:whole]), out[:whole])
    if whole < len(weight):
        last = np.zeros((GROUP, weight.shape[1]), np.uint8)
        last[: len(weight) - whole] = weight[whole:]
        layout.interleave(read_only(last), out[whole:])


def read_only(weight: np.ndarray) -> np.ndarray:
    """A read-only view: a file's map is read-only, and one compiled specialization takes every weight."""
    view = weight.view()
    view.flags.writeable = False
    return view


def _lanes_sum(builder, lanes: list):
    """kernel.lanes_sum's tree over 8 vectors."""
    pair = builder.fadd
    return pair(pair(pair(lanes[0], lanes[4]), pair(lanes[2], lanes[6])),
                pair(pair(lanes[1], lanes[5]), pair(lanes[3], lanes[7])))


def _tokens(n_tokens: int):
    """The intrinsic (w, row, acts, first, out, column) -> None: out[first + t, column .. column + 15] for
    t < n_tokens (the columns out has, where it ends before column + 16), rows row .. row + 15 of w (laid out by
    interleave) against the activations acts its type's kernels take."""

    @intrinsic
    def group_tokens(typingctx, w, row, acts, first, out, column):
        layout = LAYOUTS[ir.record_name(w).removesuffix(SUFFIX)]

        def codegen(context, builder, signature, args):
            w_type, _, acts_type, _, out_type, _ = signature.args
            w_value, row_value, acts_value, first_value, out_value, column_value = args
            floats = ir.vector(F32, GROUP)
            steps = cgutils.unpack_tuple(builder, context.make_array(w_type)(context, builder, w_value).shape, 2)[1]
            record_bytes = GROUP * layout.block_size
            group_at = ir.byte_pointer(context, builder, w_type, w_value,
                                       builder.mul(builder.mul(row_value, steps), ir.const(I64, layout.block_size)))
            tokens = [builder.add(first_value, ir.const(I64, t)) for t in range(n_tokens)]
            lanes = cgutils.alloca_once(builder, llvm.ArrayType(floats, 8 * n_tokens))
            for i in range(8 * n_tokens):
                builder.store(ir.const(floats, 0.0), builder.gep(lanes, [ir.const(I32, 0), ir.const(I32, i)]))
            with cgutils.for_range(builder, steps) as loop:
                s = loop.index
                record_at = builder.gep(group_at, [builder.mul(s, ir.const(I64, record_bytes))])
                for line in range(0, record_bytes, 64):
                    ir.prefetch_line(builder, builder.gep(record_at, [ir.const(I64, PREFETCH + line)]))
                call = Call(context, builder, acts_type, acts_value, tokens, record_at, s, steps)
                lane = builder.trunc(builder.urem(s, ir.const(I64, 8)), I32)
                for t, update in enumerate(layout.updates(call)):
                    at = builder.gep(lanes, [ir.const(I32, 0), builder.add(lane, ir.const(I32, 8 * t))])
                    builder.store(update(builder.load(at)), at)
            _store(context, builder, out_type, out_value, column_value, tokens,
                   [[builder.load(builder.gep(lanes, [ir.const(I32, 0), ir.const(I32, 8 * t + i)])) for i in range(8)]
                    for t in range(n_tokens)])
            return context.get_dummy_value()

        return types.none(w, types.intp, acts, types.intp, out, types.intp), codegen

    return group_tokens


def _store(context, builder, out_type, out_value, column, tokens: list, lanes: list) -> None:
    """out[token, column .. column + 15] = the lanes' sum, for each token (only out's own columns)."""
    out_shape = context.make_array(out_type)(context, builder, out_value).shape
    left = builder.sub(cgutils.unpack_tuple(builder, out_shape, 2)[1], column)  # out's columns from column
    for token, values in zip(tokens, lanes):
        total = _lanes_sum(builder, values)
        at = ir.row_pointer(context, builder, out_type, out_value, token, column)
        with builder.if_else(builder.icmp_signed(">=", left, ir.const(I64, GROUP))) as (whole, last):
            with whole:
                ir.store(builder, total, at, 0)
            with last:  # the matrix's last group, made whole with zero rows: only its own rows' lanes
                ir.masked_store(builder, total, at, ir.lanes_below(builder, left, GROUP))


_MANY, _ONE = _tokens(TOKENS), _tokens(1)


@njit(cache=True, nogil=True)
def group_rows(w, r0, r1, acts, out):  # w: interleave's records; out: [n_tokens, rows] float32
    """Rows r0 .. r1 - 1 of out (r0 a multiple of 16), on this thread."""
    for row in range(r0, r1, GROUP):
        _group(w, row, acts, out, row)


@njit(cache=True, nogil=True)
def group_columns(w, picked, acts, group, out):  # picked: [m] int64, ascending; group: [n_tokens, 16] float32
    """out[:, r] for each row r in picked: each group of 16 rows that holds one computed once into group (its
    rows share every cache line, so the others cost no more reading), then the picked rows' columns copied."""
    held = -1
    for r in picked:
        first = r - r % GROUP
        if first != held:
            _group(w, first, acts, group, 0)
            held = first
        for t in range(out.shape[0]):
            out[t, r] = group[t, r - first]


@njit(cache=True, nogil=True, inline="always")
def _group(w, row, acts, out, column):
    """out[:, column .. column + 15] = rows row .. row + 15 of w against every token: TOKENS at a time, then one
    at a time."""
    n = out.shape[0]
    t = 0
    while t + TOKENS <= n:
        _MANY(w, row, acts, t, out, column)
        t += TOKENS
    while t < n:
        _ONE(w, row, acts, t, out, column)
        t += 1


from kinetic_cpu.kernels import bgroups, kgroups  # noqa: E402,F401  (they register their LAYOUTS)
