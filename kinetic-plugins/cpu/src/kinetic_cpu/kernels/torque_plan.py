"""What Torque's fused pass (torque.py) walks: the plan's tables, a pass's rows, and the scratch room.

The plan (kinetic_cpu/torque_tables.py builds it) is tables of numbers: a row per block, a row per matrix (where its
blocks are, and the address of rows compiled for them), a row per norm, one float32 pool holding the norms'
weights and the biases, and the addresses of the code the pass calls (CODE). The room is a row of addresses of
scratch arrays the plan's owner keeps, each sized for the most rows a pass takes; a pass views the part it
uses. Tables of numbers rather than arrays in tuples keep the compiled code small: numba passes an array as
seven values, to every call.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from kinetic_cpu.kernels.driver import PAD
from kinetic_cpu.kernels.intrinsics import pointer_at

_JIT = dict(cache=True, nogil=True, error_model="numpy")

# a block's row: its kind, its norms (an index into the norms, -1: none), its matrices, an attention block's
# rope, heads, attention layer (a short convolution's: its kept rows in Step.conv_rows; a recurrent block's: its
# state in Step.states) and kind of visibility (indices into Step's tables), a convolution's weights ([width,
# channels] in the pool) and width, an attention block's sinks ([n_head] in the pool; -1: none), and a Mamba-2
# block's d_inner, groups, state size, its dt_bias, a and d ([n_head] each, one after another in the pool), its
# convolution's bias (in the pool; -1: none) and its out_norm (a norm; -1: none); what the block reads (x, or
# SHARED: a Parallel block's mixers' one normed input, which its first mixer's NORM makes) and where its output
# goes (SUMS_TO)
KIND, NORM, POST_NORM, Q_NORM, K_NORM, AFTER_ROPE, M1, M2, M3, M4, ROPE, NEOX, N_HEAD, N_KV, LAYER, VISIBLE, CONV, \
    CONV_WIDTH, SINKS, D_INNER, N_GROUP, D_STATE, SSM, CONV_BIAS, OUT_NORM, SHARED, SUMS_TO, M5, L2_NORM = range(29)
BLOCK_FIELDS = 29
# SUMS_TO: x += the output (a block); a Parallel block's mixers' outputs summed in order, then added: the first
# into SUMMED, the next added to it, the last added to it and the sum into x
RESIDUAL, SUM_FIRST, SUM_NEXT, SUM_LAST = range(4)
ATTENTION, FEED_FORWARD, SHORT_CONV, MAMBA2, DELTA_NET = range(5)  # KIND: M1..M4 are q, k, v, o; gate (-1: none),
# up, down; or -1, in_proj, out_proj; or Gated DeltaNet's qkv_proj, gate_proj, beta_proj, alpha_proj, and M5 its
# out_proj. Gated DeltaNet's N_HEAD, N_KV, D_STATE and D_INNER are its value heads, key heads, head_dim and
# value heads times head_dim, SSM its dt_bias and a, L2_NORM the norm (weights of one, l2_eps / head_dim) of its
# q and k
# a matrix's row: the address of rows compiled for it, its blocks' address, rows, blocks a row, bytes a block,
# the activations it takes (activations.Q8_0, Q8_K or FLOAT), its bias's offset in the pool (-1: none)
ROWS_AT, ADDRESS, N_ROWS, STEPS, SIZE, ACTS, BIAS = range(7)
MATRIX_FIELDS = 7
FLOAT = 2
# Plan.code: what the pass calls by address, each compiled once on its own (numba optimizes a function again
# with all the code it calls linked in): the walk, its three kinds of phase, the one-thread work (WORK), and the
# unfused pass's kernels,
# so that the compiled code is the one the unfused pass runs: ATTEND and GATE for the model's head count and
# activation (ops.attend_address, ops.gate_address; the pass's jobs hold shares.ANY in their place).
WALK, SERIAL, PRODUCTS, JOBS, WORK, QUANTIZE, ATTEND, GATE, RECURRENT_WORK, SCAN = range(10)
CODE = 10  # RECURRENT_WORK and SCAN: the recurrent blocks' one-thread work and scan phases, compiled (0 unless) where a
# plan has such blocks
# a block's stages, in the order its phases run them: one-thread work (NORMED: x normed and its activations
# for the first products; QUERIES: q and k normed and rotated, the queries, k and v into the caches; SECOND:
# the activations for the last product; OUTPUT: its output added to x; CONVOLVED: b * u kept, convolved, times
# c; STATE_CONV: a recurrent block's convolution over its kept tail, which moves on a row; GATED: its gated,
# normed output), products (FIRST: q, k, v, gate and up, or in_proj; LAST: o, down or out_proj) and jobs (ATTEND_ROWS:
# attention; GATE_ROWS: act(gate) * up; SCAN_ROWS: a row and a head of a recurrent scan)
NORMED, QUERIES, SECOND, OUTPUT, FIRST, LAST, ATTEND_ROWS, GATE_ROWS, CONVOLVED, STATE_CONV, SCAN_ROWS, \
    GATED = range(12)
STAGES = np.array([[NORMED, FIRST, QUERIES, ATTEND_ROWS, SECOND, LAST, OUTPUT, -1],  # by KIND, -1 past the last
                   [NORMED, FIRST, GATE_ROWS, SECOND, LAST, OUTPUT, -1, -1],
                   [NORMED, FIRST, CONVOLVED, SECOND, LAST, OUTPUT, -1, -1],
                   [NORMED, FIRST, STATE_CONV, SCAN_ROWS, GATED, SECOND, LAST, OUTPUT],
                   [NORMED, FIRST, STATE_CONV, SCAN_ROWS, GATED, SECOND, LAST, OUTPUT]], np.int64)
STAGE_CODE = np.array([SERIAL] * 4 + [PRODUCTS] * 2 + [JOBS] * 2 + [SERIAL] * 2 + [SCAN, SERIAL], np.int64)  # each
# stage's phase's code
# the room's rows: float32 h (a product's input), outs (a product phase's outputs, matrix after matrix),
# attended, ones; the input as Q8_0 and Q8_K activations (q int8, d float32, sums int32); the queries at float16
# precision (float64);
# each worker's float32 product scratch (acc) and float64 attention scratch (heads, scores, sums); a recurrent
# block's float32 rows (its convolution's window, v after it, y and z); a Parallel block's normed input and
# its mixers' sum so far (float32 [n, n_embd])
H, OUTS, ATTENDED, ONES, Q8_0_Q, Q8_0_D, Q8_0_SUMS, Q8_K_Q, Q8_K_D, Q8_K_SUMS, HALF_QUERIES, ACC, HEADS, SCORES, \
    SUMS, SSM_ROWS, SHARED_IN, SUMMED = range(18)
ROOM_FIELDS = 18


class Plan(NamedTuple):
    blocks: np.ndarray  # [n_blocks, BLOCK_FIELDS] int64
    matrices: np.ndarray  # [n_matrices, MATRIX_FIELDS] int64
    norms: np.ndarray  # [n_norms, 2] int64: each norm's weights' offset in floats, and its width
    eps: np.ndarray  # [n_norms] float64
    floats: np.ndarray  # float32: the norms' weights and the biases
    scales: np.ndarray  # [n_blocks] float64: each attention block's score scale
    code: np.ndarray  # [CODE] int64
    residual_scale: float  # a block's output is multiplied by it before it is added, unless it is 1
    head_dim: int  # every attention block's
    heads_count: int  # the query heads an attention kernel call takes (ops.attend's width)
    key_blocks: int  # a key cache's blocks of positions (ops.attend's keys: [n_kv, key_blocks, hd, KEY_BLOCK])
    context: int  # a value cache's positions
    n_phases: int  # the blocks' phases


class Step(NamedTuple):
    """A pass's rows as every block reads them (the runner's _Attending)."""

    positions: np.ndarray  # [n] int64
    cache_of_row: np.ndarray  # [n] int64
    addresses: np.ndarray  # [layers, caches, 2] int64: each attention layer's caches' keys and values
    firsts: np.ndarray  # [kinds, n] int64: each row's first visible position, by kind of visibility
    lasts: np.ndarray  # [kinds, n] int64
    cos: np.ndarray  # [ropes, n, n_dims / 2] float64 (ops.rope_angles)
    sin: np.ndarray
    conv_rows: np.ndarray  # [short convolutions, caches] int64: each one's kept rows' address (cache.conv_rows)
    states: np.ndarray  # [recurrent layers, caches] int64: each one's state buffer's address (RecurrentStates)


def room_arrays(most_rows: int, widest: int, most_out: int, most_heads: int, head_dim: int, heads_count: int,
                context: int, workers: int, most_ssm: int) -> list[np.ndarray]:
    """The room's arrays, in ROOM_FIELDS order, for passes of up to most_rows rows: products of inputs up to
    widest (a multiple of 256) wide and phases of up to most_out outputs, attention of up to most_heads heads
    over up to `context` positions, on `workers` threads, and recurrent blocks of up to most_ssm floats (ssm_floats)."""
    wide, heads = most_rows * widest, most_rows * most_heads * head_dim
    f32, scratch = np.float32, (workers, heads_count, head_dim)
    return [np.empty(wide, f32), np.empty(most_rows * most_out, f32), np.empty(heads, f32), np.ones(wide, f32),
            np.empty(wide, np.int8), np.empty(wide // 32, f32), np.empty(wide // 32, np.int32),
            np.empty(wide, np.int8), np.empty(wide // 256, f32), np.empty(wide // 16, np.int32),
            np.empty(heads), np.empty((workers, most_rows + PAD, 8), f32), np.zeros(scratch),
            np.empty((workers, heads_count, context)), np.empty(scratch), np.empty(most_ssm, f32), np.empty(wide, f32),
            np.empty(wide, f32)]


def ssm_floats(most_rows: int, channels: int, d_inner: int, width: int) -> int:
    """The SSM_ROWS floats a recurrent block takes: a window of width rows of its convolution's channels, and per
    row its convolved channels, y and z."""
    return width * channels + most_rows * (channels + 2 * d_inner)


@numba.njit(**_JIT, inline="always")
def floats(room, field, rows, columns):
    """Room row `field` (float32) as a [rows, columns] array."""
    return numba.carray(pointer_at(room[field]), (rows, columns), np.float32)


@numba.njit(**_JIT, inline="always")
def scratch(room, field, workers, count, width):
    """Room row `field` (float64 per worker) as [workers, count, width]."""
    return numba.carray(pointer_at(room[field]), (workers, count, width), np.float64)


@numba.njit(**_JIT, inline="always")
def q8_0_acts(room, n, k):
    """The room's Q8_0 activations of [n, k] values, as activations.quantize_q8_0 gives them."""
    return (numba.carray(pointer_at(room[Q8_0_Q]), (n, k), np.int8), floats(room, Q8_0_D, n, k // 32),
            numba.carray(pointer_at(room[Q8_0_SUMS]), (n, k // 32), np.int32))


@numba.njit(**_JIT, inline="always")
def q8_k_acts(room, n, k):
    """The room's Q8_K activations of [n, k] values, as activations.quantize_q8_k gives them."""
    return (numba.carray(pointer_at(room[Q8_K_Q]), (n, k), np.int8), floats(room, Q8_K_D, n, k // 256),
            numba.carray(pointer_at(room[Q8_K_SUMS]), (n, k // 16), np.int32))
