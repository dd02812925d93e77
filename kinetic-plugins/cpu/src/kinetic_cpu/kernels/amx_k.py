"""Batch products of the K-quants (Q2_K .. Q6_K, IQ4_XS) on AMX tiles, with kquants.py's values bit for bit.

A super-block's runs (8 of 32 weights or 16 of 16, each with its own integer scale) take one tile product
each: C = the run's quants (q - offset, so signed for Q6_K and Q3_K; IQ4_XS's table values are signed) . x_q
for 16 rows and 16 tokens, exact, then I[r] += s_run[r] * C[r] in int32, the 16 rows' I held in registers
across the runs. The
minimums' M = sum over runs of m_run * (run sum of x_q) is exact in float32 (every term and partial sum is
under 2^24), so fmas sum it. Lane (super-block % 8) then takes fma(d_w d_x, I, lane) and
fma(-(dmin_w d_x), M, lane), as kquants.py's one-token kernels do: only exact integers move to the tiles.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from kinetic_cpu.kernels import halves, ir, kquants
from kinetic_cpu.kernels.amx import TILE, block_dots, configure, release, tile_config, tile_row_block, write_tile

SPECS = kquants.SPECS
MIN_TOKENS = 8  # a half-full tile already beats the K-quant step kernels (for Q4_K; Q6_K breaks even)
CONFIGS = {run: tile_config(run) for run in (16, 32)}


def _spec_of(w_type):
    return SPECS[ir.record_name(w_type)]


def _run(spec) -> int:
    return 256 // spec.runs


@njit(cache=True, nogil=True)
def tiles(q, d, sums, run):  # q: [n, k] int8; d: [n, k / 256]; sums: [n, k / 16] (Q8_K)
    """The Q8_K activations as tiles take them, runs of `run`: (b [token tiles, runs, run / 4, 16 tokens, 4]
    int8, d_x [token tiles, super-blocks, 16] float32, run sums of x_q [token tiles, runs, 16] float32, exact),
    tokens past n zero."""
    n, k = q.shape
    n_tiles, n_runs = (n + TILE - 1) // TILE, k // run
    words, b = q.view(np.int32), np.zeros((n_tiles, n_runs, run // 4, TILE), np.int32)  # runs of 4 bytes
    d_x = np.zeros((n_tiles, k // 256, TILE), np.float32)
    run_sums = np.zeros((n_tiles, n_runs, TILE), np.float32)
    for tile in range(n_tiles):  # written in order, read from the tile's tokens side by side
        tokens = min(TILE, n - TILE * tile)
        for j in range(n_runs):
            for i in range(run // 4):
                for lane in range(tokens):
                    b[tile, j, i, lane] = words[TILE * tile + lane, run // 4 * j + i]
            for lane in range(tokens):
                total = 0
                for g in range(run // 16):
                    total += sums[TILE * tile + lane, run // 16 * j + g]
                run_sums[tile, j, lane] = total
        for s in range(k // 256):
            for lane in range(tokens):
                d_x[tile, s, lane] = d[TILE * tile + lane, s]
    return b.view(np.int8).reshape((n_tiles, n_runs, run // 4, TILE, 4)), d_x, run_sums


@intrinsic
def decode_rows(typingctx, w, row, n_rows, sb, a, scales, mins, d):
    """Super-block sb of rows row .. row + 15 of w: quants (less the offset) into a [runs, 16, run], the
    run scales into scales [runs, 16] int32, the minimums into mins [runs, 16] float32 (types with them),
    d and dmin into d [2, 16]; rows from n_rows on repeat the last row that exists."""
    spec = _spec_of(w)
    run = _run(spec)

    def codegen(context, builder, signature, args):
        w_type, _, _, _, a_type, s_type, m_type, d_type = signature.args
        w_value, first, count, index, a_value, s_value, m_value, d_value = args
        a_at, s_at, m_at, d_at = (ir.byte_pointer(context, builder, t, v) for t, v in
                                  ((a_type, a_value), (s_type, s_value), (m_type, m_value), (d_type, d_value)))
        for r in range(TILE):
            block_at = tile_row_block(context, builder, w_type, w_value, first, r, count, index)
            for c in range(8):  # chunk c: runs c (of 32) or 2c and 2c + 1 (of 16)
                q = spec.decode(builder, block_at, c)
                q = builder.sub(q, ir.const(q.type, spec.offset)) if spec.offset else q
                for part in range(32 // run):
                    piece = builder.shuffle_vector(q, q, ir.indices(range(run * part, run * part + run)))
                    ir.store(builder, piece, a_at, run * (TILE * (32 // run * c + part) + r))
            scales, minimums = spec.scales(builder, block_at)
            for j in range(spec.runs):
                ir.store(builder, builder.extract_element(scales, ir.const(ir.I32, j)), s_at, 4 * (TILE * j + r))
                if minimums is not None:
                    value = builder.sitofp(builder.extract_element(minimums, ir.const(ir.I32, j)), ir.F32)
                    ir.store(builder, value, m_at, 4 * (TILE * j + r))
            ir.store(builder, halves.gather_f16(builder, block_at, spec.d_at, 0, 1), d_at, 4 * r)
            if minimums is not None:
                ir.store(builder, halves.gather_f16(builder, block_at, spec.dmin_at, 0, 1), d_at, 4 * (TILE + r))
        return context.get_dummy_value()

    return types.none(w, types.intp, types.intp, types.intp, a, scales, mins, d), codegen


def _exact_sums(builder, name, run, spec, a_at, s_at, b_at, c_at):
    """The 16 rows' I (<16 x i32> each) of one super-block: a tile product a run, alternate runs on tile
    sets 0-2 and 3-5, each run's C times its row scales."""
    words = ir.vector(ir.I32, TILE)
    sums = [ir.const(words, 0)] * TILE
    for j in range(spec.runs):
        block_dots(builder, name, 3 * (j % 2), builder.gep(a_at, [ir.const(ir.I64, run * TILE * j)]),
                   builder.gep(b_at, [ir.const(ir.I64, run * TILE * j)]), c_at[j % 2], run)
        for r in range(TILE):
            scale = ir.splat(builder, ir.load(builder, s_at, 4 * (TILE * j + r), ir.I32), TILE)
            sums[r] = builder.add(sums[r], builder.mul(scale, ir.load(builder, c_at[j % 2], 4 * TILE * r, words)))
    return sums


def _minimum_sums(builder, spec, m_at, x_sums_at):
    """The 16 rows' M (<16 x float> each, exact) of one super-block."""
    floats = ir.vector(ir.F32, TILE)
    sums = [ir.const(floats, 0.0)] * TILE
    for j in range(spec.runs):
        x_sums = ir.load(builder, x_sums_at, 4 * TILE * j, floats)
        for r in range(TILE):
            minimum = ir.splat(builder, ir.load(builder, m_at, 4 * (TILE * j + r), ir.F32), TILE)
            sums[r] = ir.fma(builder, minimum, x_sums, sums[r])
    return sums


def _update_lane(builder, lane_at, factors_at, d_x, values, negate: bool) -> None:
    """Row r's 16 floats at lane_at take fma(+-(factors[r] * d_x), values[r], them)."""
    floats = ir.vector(ir.F32, TILE)
    for r, value in enumerate(values):
        scale = builder.fmul(ir.splat(builder, ir.load(builder, factors_at, 4 * r, ir.F32), TILE), d_x)
        scale = builder.fneg(scale) if negate else scale
        lane = ir.load(builder, lane_at, 4 * TILE * r, floats)
        ir.store(builder, ir.fma(builder, scale, value, lane), lane_at, 4 * TILE * r)


@intrinsic
def lane_sums(typingctx, w, a, scales, mins, d, acts, tile, c, lanes):
    """lanes [8, 16 rows, 16 tokens] float32 for one tile of rows of w (decode_rows' buffers for every
    super-block: a [sbs, runs, 16, run], scales and mins [sbs, runs, 16], d [sbs, 2, 16]) and token tile
    `tile` of acts (tiles()): lane l = the sum in order over super-blocks l, l + 8, ... of their values
    (module docstring); c: [2, 16, 16] int32 scratch."""
    spec = _spec_of(w)
    run = _run(spec)
    name = "llvm.x86.tdpbssd" if a.dtype == types.int8 else "llvm.x86.tdpbusd"

    def codegen(context, builder, signature, args):
        _, a_type, s_type, m_type, d_type, acts_type, _, c_type, lanes_type = signature.args
        _, a_value, s_value, m_value, d_value, acts_value, tile_value, c_value, lanes_value = args
        (b_type, b_value), (x_type, x_value), (r_type, r_value) = (ir.member(builder, acts_type, acts_value, i)
                                                                   for i in range(3))
        floats = ir.vector(ir.F32, TILE)
        n_sbs = ir.n_tokens(context, builder, d_type, d_value)
        c_at = [ir.byte_pointer(context, builder, c_type, c_value, ir.const(ir.I64, 4 * TILE * TILE * i)) for i in range(2)]
        lanes_at = ir.byte_pointer(context, builder, lanes_type, lanes_value)
        for i in range(8 * TILE):
            ir.store(builder, ir.const(floats, 0.0), lanes_at, 4 * TILE * i)

        def at(array_type, array, index, size: int):
            return ir.item_pointer(context, builder, array_type, array, index, size)

        with cgutils.for_range(builder, n_sbs) as loop:
            sb = loop.index
            tile_sb = builder.add(builder.mul(tile_value, n_sbs), sb)  # in acts' [token tiles x super-blocks]
            first_run = builder.mul(tile_sb, ir.const(ir.I64, spec.runs))
            exact = _exact_sums(builder, name, run, spec, at(a_type, a_value, sb, spec.runs * TILE * run),
                                at(s_type, s_value, sb, 4 * spec.runs * TILE), at(b_type, b_value, first_run, TILE * run),
                                c_at)
            d_x = ir.load(builder, at(x_type, x_value, tile_sb, 4 * TILE), 0, floats)
            d_at = at(d_type, d_value, sb, 8 * TILE)
            lane_at = at(lanes_type, lanes_value, builder.urem(sb, ir.const(ir.I64, 8)), 4 * TILE * TILE)
            _update_lane(builder, lane_at, d_at, d_x, [builder.sitofp(v, floats) for v in exact], negate=False)
            if spec.dmin_at >= 0:
                minimums = _minimum_sums(builder, spec, at(m_type, m_value, sb, 4 * spec.runs * TILE),
                                         at(r_type, r_value, first_run, 4 * TILE))
                _update_lane(builder, lane_at, builder.gep(d_at, [ir.const(ir.I64, 4 * TILE)]), d_x, minimums, negate=True)
        return context.get_dummy_value()

    return types.none(w, a, scales, mins, d, acts, types.intp, c, lanes), codegen


def buffers(w, n_sbs):
    raise NotImplementedError  # compiled code only


@overload(buffers, inline="always")
def _buffers(w, n_sbs):
    """decode_rows' buffers for n_sbs super-blocks: a (int8 quants less an offset or signed, else uint8), scales,
    mins, d."""
    spec = _spec_of(w)
    runs, run, dtype = spec.runs, _run(spec), np.int8 if spec.offset or spec.signed else np.uint8
    return lambda w, n_sbs: (np.zeros((n_sbs, runs, TILE, run), dtype), np.zeros((n_sbs, runs, TILE), np.int32),
                             np.zeros((n_sbs, runs, TILE), np.float32), np.zeros((n_sbs, 2, TILE), np.float32))


def config_of(w):
    raise NotImplementedError


@overload(config_of, inline="always")
def _config_of(w):
    config = CONFIGS[_run(_spec_of(w))]
    return lambda w: config


def run_of(name: str) -> int:
    """The run length of K-quant type `name`: what tiles() takes."""
    return _run(SPECS[name])


@njit(cache=True, nogil=True)
def row_tiles(w, r0, r1, acts, out):  # acts: tiles(); out: [n, rows] float32
    """Rows r0 .. r1 - 1 of out, 16 at a time, on this thread: each tile of rows decoded once, then taken
    against each tile of tokens."""
    a, scales, mins, d = buffers(w, w.shape[1])
    c, lanes = np.empty((2, TILE, TILE), np.int32), np.empty((8, TILE, TILE), np.float32)  # lanes: lane, row, token
    totals = np.empty((TILE, TILE), np.float32)
    configure(config_of(w))
    for r in range(r0, r1, TILE):
        n_rows = min(TILE, r1 - r)
        for sb in range(w.shape[1]):
            decode_rows(w, r, n_rows, sb, a[sb], scales[sb], mins[sb], d[sb])
        for tile in range(acts[0].shape[0]):
            lane_sums(w, a, scales, mins, d, acts, tile, c, lanes)
            write_tile(lanes, totals, out, r, n_rows, tile)
    release()
