"""Batch products of Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 weights on Intel AMX tiles (Intel SDM vol. 1, ch. 18),
with the 32-weight block kernels' values bit for bit.

One tile product gives a block's exact integer dots for 16 weight rows and 16 tokens (tdpbssd for signed quants:
Q8_0's, and the table values of IQ4_NL and MXFP4; tdpbusd for the unsigned ones); then, as in block32.py, lane
(block % 8) of each (row, token) accumulator takes fma(d_w * d_x, S - offset * sum x_q, lane), and
kernel.lanes_sum's tree sums the 8 lanes. Only the integer sums move to the tiles, and they are exact, so a
batch here gives each token what the one-token kernels give it.

Tiles: C (tmm0) 16 rows x 16 int32; A (tmm1) 16 weight rows x a block's 32 quants, decoded into a buffer;
B (tmm2) 8 runs of 4 bytes x 16 tokens, a block's activations as tiles() lays them out; alternate blocks
of a lane use tmm3..5 the same way, so a block's product need not wait for the one before to be stored.
The blocks go lane by lane, so a lane's 16 row accumulators (16 tokens each) stay in registers. Linux lends the
tile state to a process that asks (arch_prctl ARCH_REQ_XCOMP_PERM); without AMX-INT8 or that permission,
AVAILABLE is False and the 32-weight block kernels take every batch.
"""

from __future__ import annotations

import ctypes
import platform
import sys

import numpy as np
from llvmlite import ir as llvm
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from kinetic_cpu.kernels import block32, ir
from kinetic_cpu.kernels.activations import q8_0_group

TILE = 16  # rows and tokens per tile
SPECS = {name: block32.SPECS[name] for name in ("Q8_0", "Q4_0", "Q5_0", "IQ4_NL", "MXFP4")}
MIN_TOKENS = 16  # fewer: the 32-weight block kernels are as fast (a tile of 16 tokens costs the same however full)


def _spec_of(w_type):
    """The spec of a numba array type of block records (the record's one field is named by the type)."""
    return SPECS[ir.record_name(w_type)]


def _permitted() -> bool:
    """Whether this process may use AMX tiles: the CPU has them and Linux grants the tile data state."""
    if not (ir.host_has("amx-int8") and sys.platform == "linux" and platform.machine() == "x86_64"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(158, 0x1023, 18) == 0  # SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA


AVAILABLE = _permitted()


def tile_config(run: int) -> np.ndarray:
    """The 64-byte tile configuration (palette 1) for products over runs of `run` weights (32: a block;
    amx_k.py's K-quant runs: 32 or 16): C, A (16 rows x run bytes) and B (run / 4 rows of 16 tokens x 4
    bytes) as the module's docstring gives them, twice."""
    config = np.zeros(64, np.uint8)
    config[0] = 1
    columns, rows = config[16:48].view(np.uint16), config[48:64]
    for tile, (n_rows, n_bytes) in enumerate([(TILE, 4 * TILE), (TILE, run), (run // 4, 4 * TILE)] * 2):
        columns[tile], rows[tile] = n_bytes, n_rows
    return config


CONFIG = tile_config(32)


def _void(builder, name: str, *operands) -> None:
    ir.call_intrinsic(builder, name, llvm.VoidType(), *operands)


@intrinsic
def configure(typingctx, config):
    """Load the tile configuration (CONFIG) on this thread."""

    def codegen(context, builder, signature, args):
        _void(builder, "llvm.x86.ldtilecfg", ir.byte_pointer(context, builder, signature.args[0], args[0]))
        return context.get_dummy_value()

    return types.none(config), codegen


@intrinsic
def release(typingctx):
    """Give the tile state back (tilerelease)."""

    def codegen(context, builder, signature, args):
        _void(builder, "llvm.x86.tilerelease")
        return context.get_dummy_value()

    return types.none(), codegen


def block_dots(builder, name: str, first: int, a_at, b_at, c_at, run: int = 32) -> None:
    """Tiles first .. first + 2 (C, A, B): c_at's [16 rows, 16 tokens] int32 = the run's quants at a_at
    ([16, run]) . the B tile at b_at, by the tile product `name` (llvm.x86.tdpbssd or tdpbusd)."""
    c_tile, a_tile, b_tile = (ir.const(ir.I8, first + i) for i in range(3))
    _void(builder, "llvm.x86.tilezero", c_tile)
    _void(builder, "llvm.x86.tileloadd64", a_tile, a_at, ir.const(ir.I64, run))
    _void(builder, "llvm.x86.tileloadd64", b_tile, b_at, ir.const(ir.I64, 4 * TILE))
    _void(builder, name, c_tile, a_tile, b_tile)
    _void(builder, "llvm.x86.tilestored64", c_tile, c_at, ir.const(ir.I64, 4 * TILE))


def tile_row_block(context, builder, w_type, w, first, r: int, count, index):
    """i8* to block `index` of row first + r of w, a tile's row r of the count rows (i64) that exist; past
    them the last that exists, so a part tile reads nothing past the matrix."""
    last = builder.sub(count, ir.const(ir.I64, 1))
    existing = builder.select(builder.icmp_signed("<", ir.const(ir.I64, r), count), ir.const(ir.I64, r), last)
    return ir.row_pointer(context, builder, w_type, w, builder.add(first, existing), index)


@intrinsic
def decode_group(typingctx, w, row, n_rows, first, width, a, d_w):
    """Blocks first .. first + width - 1 of rows row .. row + 15 of w (a group kept in runs, or a single
    block: block32.keep_in_runs): each block's quants into a[block]'s rows, its d into d_w[block]; rows from
    n_rows on repeat the last row that exists, so a part tile reads nothing past the matrix."""
    spec = _spec_of(w)

    def codegen(context, builder, signature, args):
        w_type, _, _, _, _, a_type, d_type = signature.args
        w_value, row_value, count, first_value, width_value, a_value, d_value = args
        a_at = ir.item_pointer(context, builder, a_type, a_value, first_value, 32 * TILE)
        d_at = ir.item_pointer(context, builder, d_type, d_value, first_value, 4 * TILE)
        for n in (block32.RUNS, block32.RUNS // 2, 1):
            with builder.if_then(builder.icmp_signed("==", width_value, ir.const(ir.I64, n))):
                for r in range(TILE):  # unrolled: straight-line code schedules the 16 decodes together
                    at = tile_row_block(context, builder, w_type, w_value, row_value, r, count, first_value)
                    d = block32.scales(builder, spec, at, n)
                    for l, quants in enumerate(block32.quants(builder, spec, at, n)):
                        ir.store(builder, quants, a_at, 32 * (TILE * l + r))
                        ir.store(builder, builder.extract_element(d, ir.const(ir.I32, l)), d_at, 4 * (TILE * l + r))
        return context.get_dummy_value()

    return types.none(w, types.intp, types.intp, types.intp, types.intp, a, d_w), codegen


def quants_buffer(w, n_blocks):
    raise NotImplementedError


@overload(quants_buffer, inline="always")
def _quants_buffer(w, n_blocks):
    """[n_blocks, 16, 32] buffers for tile A, of the type's quant signedness."""
    dtype = np.int8 if _spec_of(w).signed else np.uint8
    return lambda w, n_blocks: np.zeros((n_blocks, TILE, 32), dtype)


def offset_of(w):
    raise NotImplementedError


@overload(offset_of, inline="always")
def _offset_of(w):
    offset = _spec_of(w).offset
    return lambda w: offset


@njit(cache=True, nogil=True)
def tiles(q, d, sums):  # q: [n, k] int8 in the 32-weight block kernels' order; d, sums: [n, k / 32]
    """The activations as tiles take them: (b [token tiles, blocks, 8 runs, 16 tokens, 4] int8, d_x and
    sums [token tiles, blocks, 16]), tokens past n zero."""
    n, n_blocks = q.shape[0], q.shape[1] // 32
    n_tiles = (n + TILE - 1) // TILE
    words, runs = q.view(np.int32), np.zeros((n_tiles, n_blocks, 8, TILE), np.int32)  # runs of 4 bytes
    d_x, sums_x = np.zeros((n_tiles, n_blocks, TILE), np.float32), np.zeros((n_tiles, n_blocks, TILE), np.int32)
    for tile in range(n_tiles):  # written in order, read from the tile's tokens side by side
        tokens = min(TILE, n - TILE * tile)
        for block in range(n_blocks):
            first, width = q8_0_group(block, n_blocks)
            at = 8 * first + block - first  # in words
            for run in range(8):
                for lane in range(tokens):
                    runs[tile, block, run, lane] = words[TILE * tile + lane, at + width * run]
            for lane in range(tokens):
                t = TILE * tile + lane
                d_x[tile, block, lane], sums_x[tile, block, lane] = d[t, block], sums[t, block]
    return runs.view(np.int8).reshape((n_tiles, n_blocks, 8, TILE, 4)), d_x, sums_x


def _accumulate(builder, c_at, d_w_at, d_x, offsets, accs) -> None:
    """Each row r of c ([16 rows, 16 tokens] int32 sums) into its accumulator: accs[r] = fma(d_w[r] * d_x,
    c[r] - offsets, accs[r]), as the 32-weight block kernels' lanes do, 16 tokens a vector."""
    floats, words = ir.vector(ir.F32, TILE), ir.vector(ir.I32, TILE)
    for r, slot in enumerate(accs):
        value = builder.sitofp(builder.sub(ir.load(builder, c_at, 4 * TILE * r, words), offsets), floats)
        scale = builder.fmul(ir.splat(builder, ir.load(builder, d_w_at, 4 * r, ir.F32), TILE), d_x)
        builder.store(ir.fma(builder, scale, value, builder.load(slot)), slot)


@intrinsic
def lane_sums(typingctx, a, d_w, acts, tile, offset, c, lanes):
    """lanes [8, 16 rows, 16 tokens] float32 for one tile of rows (a [n_blocks, 16, 32] quants, d_w
    [n_blocks, 16]) and token tile `tile` of acts (tiles()): lane l = the sum in block order over blocks
    b = l, l + 8, ... of fma(d_w * d_x, S - offset * sum x_q, lane), S the block's exact integer dots. A lane's
    16 accumulators stay in registers; c: [2, 16, 16] int32 scratch. Consecutive blocks of a lane take
    alternate tile sets (0-2, 3-5), so a block's product need not wait for the one before to be stored."""
    name = "llvm.x86.tdpbssd" if a.dtype == types.int8 else "llvm.x86.tdpbusd"

    def codegen(context, builder, signature, args):
        a_type, w_type, acts_type, _, _, c_type, lanes_type = signature.args
        a_value, w_value, acts_value, tile_value, offset_value, c_value, lanes_value = args
        n_blocks = ir.n_tokens(context, builder, w_type, w_value)
        (b_type, b_value), (x_type, x_value), (s_type, s_value) = (ir.member(builder, acts_type, acts_value, i)
                                                                   for i in range(3))
        first_block = builder.mul(tile_value, n_blocks)  # token tile `tile`'s first block in acts
        floats, words = ir.vector(ir.F32, TILE), ir.vector(ir.I32, TILE)
        c_at = [ir.byte_pointer(context, builder, c_type, c_value, ir.const(ir.I64, 4 * TILE * TILE * i)) for i in range(2)]
        for lane in range(8):
            accs = [cgutils.alloca_once_value(builder, ir.const(floats, 0.0)) for _ in range(TILE)]
            count = ir.ceil_div(builder, builder.sub(n_blocks, ir.const(ir.I64, lane)), 8)
            with cgutils.for_range(builder, count) as loop:
                block = builder.add(builder.mul(loop.index, ir.const(ir.I64, 8)), ir.const(ir.I64, lane))
                at = builder.add(first_block, block)  # [token tiles x blocks] index of this block's activations
                a_at = ir.item_pointer(context, builder, a_type, a_value, block, 32 * TILE)
                b_at = ir.item_pointer(context, builder, b_type, b_value, at, 32 * TILE)
                odd = builder.trunc(loop.index, llvm.IntType(1))
                with builder.if_else(odd) as (then, otherwise):
                    with then:
                        block_dots(builder, name, 3, a_at, b_at, c_at[1])
                    with otherwise:
                        block_dots(builder, name, 0, a_at, b_at, c_at[0])
                d_x = ir.load(builder, ir.item_pointer(context, builder, x_type, x_value, at, 4 * TILE), 0, floats)
                sums = ir.load(builder, ir.item_pointer(context, builder, s_type, s_value, at, 4 * TILE), 0, words)
                offsets = builder.mul(sums, ir.splat(builder, builder.trunc(offset_value, ir.I32), TILE))
                d_w_at = ir.item_pointer(context, builder, w_type, w_value, block, 4 * TILE)
                _accumulate(builder, builder.select(odd, c_at[1], c_at[0]), d_w_at, d_x, offsets, accs)
            lane_at = ir.byte_pointer(context, builder, lanes_type, lanes_value)
            for r, slot in enumerate(accs):
                ir.store(builder, builder.load(slot), lane_at, 4 * TILE * (TILE * lane + r))
        return context.get_dummy_value()

    return types.none(a, d_w, acts, types.intp, types.intp, c, lanes), codegen


@njit(cache=True, nogil=True)
def row_tiles(w, r0, r1, acts, out):  # acts: tiles(); out: [n, rows] float32
    """Rows r0 .. r1 - 1 of out, 16 at a time, on this thread: each tile of rows decoded once, then taken
    against each tile of tokens."""
    b, d_x, sums = acts
    n_blocks, offset = w.shape[1], offset_of(w)
    a, d_w = quants_buffer(w, n_blocks), np.empty((n_blocks, TILE), np.float32)
    c, lanes = np.empty((2, TILE, TILE), np.int32), np.empty((8, TILE, TILE), np.float32)  # lanes: lane, row, token
    totals = np.empty((TILE, TILE), np.float32)  # row, token
    configure(CONFIG)
    for r in range(r0, r1, TILE):
        n_rows = min(TILE, r1 - r)
        block = 0
        while block < n_blocks:
            first, width = q8_0_group(block, n_blocks)  # the matrix keeps its groups as the activations do
            decode_group(w, r, n_rows, first, width, a, d_w)
            block += width
        for tile in range(b.shape[0]):
            lane_sums(a, d_w, acts, tile, offset, c, lanes)
            write_tile(lanes, totals, out, r, n_rows, tile)
    release()


@njit(cache=True, nogil=True)
def write_tile(lanes, totals, out, r, n_rows, tile):  # lanes: [8, 16 rows, 16 tokens]; totals: [16, 16] scratch
    """out[tile's tokens, r .. r + n_rows - 1] = kernel.lanes_sum's tree of the 8 lanes, 16 tokens a vector."""
    for i in range(n_rows):
        total = totals[i]
        for t in range(TILE):
            total[t] = ((lanes[0, i, t] + lanes[4, i, t]) + (lanes[2, i, t] + lanes[6, i, t])) + (
                (lanes[1, i, t] + lanes[5, i, t]) + (lanes[3, i, t] + lanes[7, i, t]))
    for t in range(tile * TILE, min(out.shape[0], tile * TILE + TILE)):
        for i in range(n_rows):
            out[t, r + i] = totals[i, t % TILE]
