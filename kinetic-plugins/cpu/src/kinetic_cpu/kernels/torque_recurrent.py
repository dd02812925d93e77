"""Torque's phases of the recurrent blocks (torque_plan.py's MAMBA2 and DELTA_NET), in passes of one row a
sequence: each row's convolution over its state's kept tail, its scan a head a job, and the gated, normed
output, by the unfused pass's own code (runner._mamba2, runner._delta_net): short_conv.convolve_row,
ops._gate_chunk (by address: GATE, SiLU), ssm_scan.scan_head, delta_net.scan_head and ops.rms_norm_into. A
sequence's state buffer is updated where it is, as RecurrentStates keeps it for a one-row pass (in_place), its
tail moved on by the row as keeping_tails moves it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from kinetic_cpu import ops
from kinetic_cpu.kernels import delta_net, ssm_scan
from kinetic_cpu.kernels.intrinsics import call_at, pointer_at
from kinetic_cpu.kernels.shares import ANY
from kinetic_cpu.kernels.short_conv import convolve_row
from kinetic_cpu.kernels.torque_plan import (CONV, CONV_BIAS, CONV_WIDTH, D_INNER, D_STATE, GATE, H, KIND, L2_NORM,
                                             LAYER, M1, MAMBA2, N_GROUP, N_HEAD, N_KV, N_ROWS, ONES, OUT_NORM, OUTS,
                                             SSM, SSM_ROWS, STATE_CONV, floats)

_JIT = dict(cache=True, nogil=True, error_model="numpy")


@numba.njit(**_JIT, inline="always")
def _channels(plan, block):
    """The convolution's channels: Mamba-2's u (d_inner), B and C (n_group d_state each); Gated DeltaNet's
    q, k and v (its qkv_proj's rows)."""
    if block[KIND] == MAMBA2:
        return block[D_INNER] + 2 * block[N_GROUP] * block[D_STATE]
    return plan.matrices[block[M1], N_ROWS]


@numba.njit(**_JIT, inline="always")
def _first_outputs(plan, room, block, n, m):
    """The block's m-th product (M1 + m) at FIRST as [n, rows]: the products' outputs one after another in OUTS."""
    at = 0
    for before in range(m):
        at += n * plan.matrices[block[M1 + before], N_ROWS] if block[M1 + before] >= 0 else 0
    rows = plan.matrices[block[M1 + m], N_ROWS]
    return floats(room, OUTS, 1, at + n * rows)[0][at:].reshape((n, rows))


@numba.njit(**_JIT, inline="always")
def _floats_at(room, offset, shape):
    """SSM_ROWS from float `offset` on, as a float32 array of `shape`."""
    return numba.carray(pointer_at(room[SSM_ROWS] + 4 * offset), shape, np.float32)


@numba.njit(**_JIT, inline="always")
def _rows(plan, room, block, n):
    """SSM_ROWS as the block's window [width, channels], its convolved rows [n, channels], and y (the scan's
    outputs) and z [n, d_inner] (torque_plan.ssm_floats)."""
    d_inner, width, channels = block[D_INNER], block[CONV_WIDTH], _channels(plan, block)
    at_v = width * channels
    at_y = at_v + n * channels
    return (_floats_at(room, 0, (width, channels)), _floats_at(room, at_v, (n, channels)),
            _floats_at(room, at_y, (n, d_inner)), _floats_at(room, at_y + n * d_inner, (n, d_inner)))


@numba.njit(**_JIT, inline="always")
def _tail(plan, step, block, i):
    """Row i's sequence's kept convolution rows [width - 1, channels], after the scan state in its buffer
    (RecurrentStates.views)."""
    channels, width = _channels(plan, block), block[CONV_WIDTH]
    scan = block[D_INNER] * block[D_STATE]  # Mamba-2's n_head d_state head_dim; Gated DeltaNet's n_head hd hd
    buffer = numba.carray(pointer_at(step.states[block[LAYER], step.cache_of_row[i]]),
                          scan + (width - 1) * channels, np.float32)
    return buffer[scan:].reshape((width - 1, channels))


@numba.njit(**_JIT)
def serial(plan, step, x, room, b, stage):
    """Recurrent block b's one-thread work at stage STATE_CONV or GATED (into H, what out_proj reads)."""
    block, n = plan.blocks[b], x.shape[0]
    if stage == STATE_CONV:
        state_conv(plan, step, room, block, n)
    else:
        gated(plan, room, block, n, floats(room, H, n, block[D_INNER]))


@numba.njit(**_JIT)
def state_conv(plan, step, room, block, n):
    """Each row's convolution input (Mamba-2: in_proj's channels after z; Gated DeltaNet: qkv_proj's) after its
    kept tail, convolved, plus the bias, through SiLU, into the block's convolved rows, and Gated DeltaNet's q
    and k l2-normed; the tail moved on by the row, as runner._windows and RecurrentStates.keeping_tails do."""
    window, v, _, _ = _rows(plan, room, block, n)
    width, channels = block[CONV_WIDTH], _channels(plan, block)
    given, start = (_first_outputs(plan, room, block, n, 1), block[D_INNER]) if block[KIND] == MAMBA2 else \
        (_first_outputs(plan, room, block, n, 0), 0)
    taps = plan.floats[block[CONV] : block[CONV] + width * channels].reshape((width, channels))
    for i in range(n):
        tail = _tail(plan, step, block, i)
        for c in range(channels):
            for j in range(width - 1):
                window[j, c] = tail[j, c]
            window[width - 1, c] = given[i, start + c]
        convolve_row(window, width - 1, taps, v[i])
        for c in range(channels):
            for j in range(width - 1):
                tail[j, c] = window[j + 1, c]
            if block[CONV_BIAS] >= 0:
                v[i, c] = v[i, c] + plan.floats[block[CONV_BIAS] + c]
    _gated_rows(plan, v, floats(room, ONES, n, channels), v)
    if block[KIND] != MAMBA2:
        _l2_norms(plan, room, block, v)


@numba.njit(**_JIT, inline="always")
def _l2_norms(plan, room, block, qkv):  # qkv: [n, channels] float32
    """q and k each divided by sqrt(its sum of squares + l2_eps), as runner._l2_norm: an RMS norm with weights of
    one and eps / head_dim (the plan's norm L2_NORM), then times 1 / sqrt(head_dim)."""
    hd, keys = block[D_STATE], block[N_KV] * block[D_STATE]
    scale = np.float32(1 / math.sqrt(hd))
    for i in range(qkv.shape[0]):
        for at in range(0, 2 * keys, hd):
            head = qkv[i : i + 1, at : at + hd]
            ops.rms_norm_into(head, floats(room, ONES, 1, hd)[0], plan.eps[block[L2_NORM]], head)
        for j in range(2 * keys):
            qkv[i, j] = qkv[i, j] * scale


@numba.njit(**_JIT)
def gated(plan, room, block, n, out):  # out: [n, d_inner] float32, what out_proj reads
    """Mamba-2: out = y * silu(z), through the out_norm where the block has one (each group normed with weights
    of one, then times the norm's weights). Gated DeltaNet: each head of y normed by the out_norm, then
    out = silu(z) * that. As runner._mamba2 and runner._delta_net do."""
    _, _, y, z = _rows(plan, room, block, n)
    d_inner, norm = block[D_INNER], block[OUT_NORM]
    if block[KIND] != MAMBA2:
        at, width = plan.norms[norm, 0], plan.norms[norm, 1]
        pieces = y.reshape((-1, width))
        ops.rms_norm_into(pieces, plan.floats[at : at + width], plan.eps[norm], pieces)
        _gated_rows(plan, _first_outputs(plan, room, block, n, 1), y, out)
        return
    zvdt = _first_outputs(plan, room, block, n, 1)
    for i in range(n):
        for j in range(d_inner):
            z[i, j] = zvdt[i, j]
    _gated_rows(plan, z, y, out)
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
def _state(jobs, i, shape):
    """Row i's sequence's scan state, [n_head, ...] float32, at the start of its buffer."""
    return numba.carray(pointer_at(jobs.states[jobs.cache_of_row[i]]), shape, np.float32)


@numba.njit(**_JIT, inline="always")
def _mamba_job(jobs, job, worker):
    """Row job // n_head's head job % n_head through ssm_scan.scan_head, its state updated where it is."""
    n_head = jobs.dt_bias.shape[0]
    i, h = job // n_head, job % n_head
    state = _state(jobs, i, (n_head, jobs.d_state, jobs.y.shape[1] // n_head))
    ssm_scan.scan_head(jobs.v[i : i + 1], jobs.dt[i : i + 1], jobs.dt_bias, jobs.a, jobs.d, state[h], state[h], h,
                       jobs.n_group, jobs.y[i : i + 1], False)


class _MambaJobs(NamedTuple):
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
    run_job = _mamba_job


@numba.njit(**_JIT)
def mamba_jobs(plan, step, room, block, n):
    """A Mamba-2 block's scan jobs: n rows times its heads."""
    _, v, y, _ = _rows(plan, room, block, n)
    n_head, at, start = block[N_HEAD], block[SSM], block[D_INNER] + _channels(plan, block)
    dt = _first_outputs(plan, room, block, n, 1)[:, start : start + n_head]
    return _MambaJobs(v, dt, plan.floats[at : at + n_head], plan.floats[at + n_head : at + 2 * n_head],
                      plan.floats[at + 2 * n_head : at + 3 * n_head], step.states[block[LAYER]], step.cache_of_row,
                      block[D_STATE], block[N_GROUP], y)


@numba.njit(**_JIT, inline="always")
def _delta_job(jobs, job, worker):
    """Row job // n_head's value head job % n_head through delta_net.scan_head, its state updated where it is."""
    n_head, hd = jobs.dt_bias.shape[0], jobs.head_dim
    i, h = job // n_head, job % n_head
    n_k, keys = jobs.n_k_head, jobs.n_k_head * hd
    row = jobs.qkv[i]
    q, k = row[:keys].reshape((1, n_k, hd)), row[keys : 2 * keys].reshape((1, n_k, hd))
    v = row[2 * keys :].reshape((1, n_head, hd))
    state = _state(jobs, i, (n_head, hd, hd))
    delta_net.scan_head(q, k, v, jobs.beta[i : i + 1], jobs.alpha[i : i + 1], jobs.dt_bias, jobs.a, state[h],
                        state[h], h, jobs.o[i].reshape((1, n_head, hd)), False)


class _DeltaJobs(NamedTuple):
    """A Gated DeltaNet block's scan jobs (kernels/shares.py), a row and a value head each."""

    qkv: np.ndarray  # [n, channels] float32: q and k (l2-normed), v
    beta: np.ndarray  # [n, n_head] float32 (before their sigmoid)
    alpha: np.ndarray  # [n, n_head] float32 (before their softplus)
    dt_bias: np.ndarray  # [n_head] float32
    a: np.ndarray
    states: np.ndarray  # [caches] int64: each sequence's state buffer (Step.states of the block's layer)
    cache_of_row: np.ndarray  # [n] int64
    head_dim: int
    n_k_head: int
    o: np.ndarray  # [n, n_head head_dim] float32
    run_job = _delta_job


@numba.njit(**_JIT)
def delta_jobs(plan, step, room, block, n):
    """A Gated DeltaNet block's scan jobs: n rows times its value heads."""
    _, qkv, y, _ = _rows(plan, room, block, n)
    n_head, at = block[N_HEAD], block[SSM]
    return _DeltaJobs(qkv, _first_outputs(plan, room, block, n, 2), _first_outputs(plan, room, block, n, 3),
                      plan.floats[at : at + n_head], plan.floats[at + n_head : at + 2 * n_head],
                      step.states[block[LAYER]], step.cache_of_row, block[D_STATE], block[N_KV], y)

