"""Torque's phases of a Mamba-2 block (torque_plan.py's MAMBA2), in passes of one row a sequence: each row's
convolution over its state's kept tail, its scan a head a job, and y * silu(z) through the out_norm, by the
unfused pass's own code (runner._mamba2): short_conv.convolve_row, ops._gate_chunk (by address: GATE, SiLU),
ssm_scan.scan_head and ops.rms_norm_into. A sequence's state buffer is updated where it is, as
RecurrentStates keeps it for a one-row pass (in_place), its tail moved on by the row as keeping_tails moves it.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from kinetic_cpu import ops
from kinetic_cpu.kernels.intrinsics import call_at, pointer_at
from kinetic_cpu.kernels.shares import ANY
from kinetic_cpu.kernels.short_conv import convolve_row
from kinetic_cpu.kernels.ssm_scan import scan_head
from kinetic_cpu.kernels.torque_plan import (CONV, CONV_BIAS, CONV_WIDTH, D_INNER, D_STATE, GATE, LAYER, M2, N_GROUP,
                                             N_HEAD, N_ROWS, ONES, OUT_NORM, OUTS, SSM, SSM_ROWS, floats)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@numba.njit(**_JIT, inline="always")
def _channels(block):
    """The convolution's channels: u (d_inner), B and C (n_group d_state each)."""
    return block[D_INNER] + 2 * block[N_GROUP] * block[D_STATE]


@numba.njit(**_JIT, inline="always")
def _floats_at(room, offset, shape):
    """SSM_ROWS from float `offset` on, as a float32 array of `shape`."""
    return numba.carray(pointer_at(room[SSM_ROWS] + 4 * offset), shape, np.float32)


@numba.njit(**_JIT, inline="always")
def _rows(room, block, n):
    """SSM_ROWS as the block's window [width, channels], v [n, channels] (convolved, through SiLU), y and z
    [n, d_inner] (torque_plan.ssm_floats)."""
    d_inner, width, channels = block[D_INNER], block[CONV_WIDTH], _channels(block)
    at_v = width * channels
    at_y = at_v + n * channels
    return (_floats_at(room, 0, (width, channels)), _floats_at(room, at_v, (n, channels)),
            _floats_at(room, at_y, (n, d_inner)), _floats_at(room, at_y + n * d_inner, (n, d_inner)))


@numba.njit(**_JIT, inline="always")
def _tail(step, block, i):
    """Row i's sequence's kept convolution rows [width - 1, channels], after the scan state in its buffer
    (RecurrentStates.views)."""
    channels, width = _channels(block), block[CONV_WIDTH]
    scan = block[D_INNER] * block[D_STATE]
    buffer = numba.carray(pointer_at(step.states[block[LAYER], step.cache_of_row[i]]),
                          scan + (width - 1) * channels, np.float32)
    return buffer[scan:].reshape((width - 1, channels))


@numba.njit(**_JIT)
def state_conv(plan, step, room, block, n):
    """Each row's v (in_proj's channels after z) after its kept tail, convolved, plus the bias, through SiLU,
    into the block's v; the tail moved on by the row, as runner._windows and RecurrentStates.keeping_tails do."""
    window, v, _, _ = _rows(room, block, n)
    width, channels, d_inner = block[CONV_WIDTH], _channels(block), block[D_INNER]
    zvdt = floats(room, OUTS, n, plan.matrices[block[M2], N_ROWS])
    taps = plan.floats[block[CONV] : block[CONV] + width * channels].reshape((width, channels))
    for i in range(n):
        tail = _tail(step, block, i)
        for c in range(channels):
            for j in range(width - 1):
                window[j, c] = tail[j, c]
            window[width - 1, c] = zvdt[i, d_inner + c]
        convolve_row(window, width - 1, taps, v[i])
        for c in range(channels):
            for j in range(width - 1):
                tail[j, c] = window[j + 1, c]
            if block[CONV_BIAS] >= 0:
                v[i, c] = v[i, c] + plan.floats[block[CONV_BIAS] + c]
    _gated_rows(plan, v, floats(room, ONES, n, channels), v)


@numba.njit(**_JIT)
def gated(plan, room, block, n, out):  # out: [n, d_inner] float32, what out_proj reads
    """out = y * silu(z), through the out_norm where the block has one: each group normed with weights of one,
    then times the norm's weights, as runner._mamba2 does."""
    _, _, y, z = _rows(room, block, n)
    d_inner = block[D_INNER]
    zvdt = floats(room, OUTS, n, plan.matrices[block[M2], N_ROWS])
    for i in range(n):
        for j in range(d_inner):
            z[i, j] = zvdt[i, j]
    _gated_rows(plan, z, y, out)
    norm = block[OUT_NORM]
    if norm < 0:
        return
    group = d_inner // block[N_GROUP]
    pieces = out.reshape((-1, group))
    ops.rms_norm_into(pieces, floats(room, ONES, 1, group)[0], plan.eps[norm], pieces)
    at = plan.norms[norm, 0]
    for i in range(n):
        for j in range(d_inner):
            out[i, j] = out[i, j] * plan.floats[at + j]


@numba.njit(**_JIT, inline="always")
def _gated_rows(plan, g, u, out):  # g, u, out: [n, width] float32
    """out = silu(g) * u, by the gate's own chunks (ops.gate) on this thread."""
    jobs = ops._GateChunks(g, u, ANY, out)
    for job in range(g.shape[0] * ((g.shape[1] + ops.GATE_CHUNK - 1) // ops.GATE_CHUNK)):
        call_at(plan.code[GATE], (jobs, job, np.int64(0)))


@numba.njit(**_JIT, inline="always")
def _scan_job(jobs, job, worker):
    """Row job // n_head's head job % n_head through ssm_scan.scan_head, its state updated where it is."""
    n_head = jobs.dt_bias.shape[0]
    i, h = job // n_head, job % n_head
    head_dim = jobs.y.shape[1] // n_head
    state = numba.carray(pointer_at(jobs.states[jobs.cache_of_row[i]]), (n_head, jobs.d_state, head_dim),
                         np.float32)
    scan_head(jobs.v[i : i + 1], jobs.dt[i : i + 1], jobs.dt_bias, jobs.a, jobs.d, state[h], state[h], h,
              jobs.n_group, jobs.y[i : i + 1], False)


class _ScanJobs(NamedTuple):
    """A Mamba-2 block's scan jobs (kernels/shares.py), a row and a head each."""

    v: np.ndarray  # [n, channels] float32: u, B and C
    dt: np.ndarray  # [n, n_head] float32
    dt_bias: np.ndarray  # [n_head] float32
    a: np.ndarray
    d: np.ndarray
    states: np.ndarray  # [caches] int64: each sequence's state buffer (Step.states of the block's layer)
    cache_of_row: np.ndarray  # [n] int64
    d_state: int
    n_group: int
    y: np.ndarray  # [n, d_inner] float32
    run_job = _scan_job


@numba.njit(**_JIT)
def scan_jobs(plan, step, room, block, n):
    """The block's scan jobs: n rows times its heads."""
    _, v, y, _ = _rows(room, block, n)
    n_head, at, start = block[N_HEAD], block[SSM], block[D_INNER] + _channels(block)
    dt = floats(room, OUTS, n, plan.matrices[block[M2], N_ROWS])[:, start : start + n_head]
    return _ScanJobs(v, dt, plan.floats[at : at + n_head], plan.floats[at + n_head : at + 2 * n_head],
                     plan.floats[at + 2 * n_head : at + 3 * n_head], step.states[block[LAYER]], step.cache_of_row,
                     block[D_STATE], block[N_GROUP], y)
