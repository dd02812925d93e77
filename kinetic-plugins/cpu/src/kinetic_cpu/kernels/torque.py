"""Torque: every block of a pass in one parallel call (docs/speed.md, Torque).

Unfused, a pass calls a kernel from Python for each norm, product, rotation, attention and gate, about fifteen
a block, and each product is a parallel region of its own: for one token, that dispatch and the threads'
wake-ups are a large share of a small model's step. run_pass walks all the blocks in one parallel region. A
block is cut into phases (torque_plan.py's stages: its norm, its products, its attention, ...); the workers take
each phase's jobs as shares.py shares them out, then wait until all of that phase's jobs are done before the
next phase. They wait for the jobs, not for each other: should numba run two workers' iterations on one thread,
the first takes every job and the second finds none left, so nothing waits for a worker that has not started.
What each phase computes is torque_work.py's, bit for bit the unfused pass's.
"""

from __future__ import annotations

import numba
import numpy as np

from kinetic_cpu.kernels import torque_recurrent as recurrent
from kinetic_cpu.kernels import torque_work as work
from kinetic_cpu.kernels.intrinsics import arrive, call_at, fetch_add, load_acquire, spin_pause, yield_thread
from kinetic_cpu.kernels.shares import Addressed, take_jobs
from kinetic_cpu.kernels.torque_plan import (ATTEND, ATTEND_ROWS, GATE, GATED, KIND, MAMBA2, N_HEAD, N_KV,
                                             RECURRENT_WORK, STAGE_CODE, STAGES, STATE_CONV, WALK, WORK)

_JIT = dict(cache=True, nogil=True, error_model="numpy")
YIELD_SPINS = 1024  # spins of a waiting worker between yields of its core (a phase's wait is mostly far shorter)


@numba.njit(**_JIT)
def run_pass(plan, step, room, taken, finished, x, workers):  # x: [n, n_embd] float32 -> its rows' outputs
    """Every block of the plan on x's rows, on `workers` threads; taken ([phases, workers, 1]) and finished
    ([phases, 1]) int64 count each phase's jobs handed out, per share, and done."""
    x = x.copy()
    taken[:] = 0
    finished[:] = 0
    _workers(plan, step, room, taken, finished, x, workers)
    return x


@numba.njit(**_JIT, parallel=True)
def _workers(plan, step, room, taken, finished, x, workers):
    """The workers' walks, in one parallel region."""
    for worker in numba.prange(workers):
        call_at(plan.code[WALK], (plan, step, x, room, taken, finished, np.int64(worker), np.int64(workers)))


@numba.njit(**_JIT)
def walk(plan, step, x, room, taken, finished, worker, workers):
    """Worker `worker`'s way through every phase of every block: a phase at a time, its code (STAGE_CODE) called
    by address."""
    phase = 0
    for b in range(plan.blocks.shape[0]):
        for stage in STAGES[plan.blocks[b, KIND]]:
            if stage < 0:
                break
            call_at(plan.code[STAGE_CODE[stage]], (plan, step, x, room, taken, finished, b, stage, phase, worker,
                                                   workers))
            phase += 1


@numba.njit(**_JIT)
def serial_phase(plan, step, x, room, taken, finished, b, stage, phase, worker, workers):
    """A phase of one job, taken by the first worker to ask: block b's one-thread work at `stage` (SERIAL; a
    recurrent block's STATE_CONV and GATED: RECURRENT_WORK)."""
    mine = 1 if fetch_add(taken[phase, 0]) == 0 else 0
    if mine:
        work = plan.code[RECURRENT_WORK] if stage == STATE_CONV or stage == GATED else plan.code[WORK]
        call_at(work, (plan, step, x, room, b, stage))
    _finish(finished, phase, mine, 1)


@numba.njit(**_JIT)
def products_phase(plan, step, x, room, taken, finished, b, stage, phase, worker, workers):
    """Block b's products at stage FIRST or LAST, ROWS rows of a matrix a job."""
    jobs = work.products(plan, x, room, b, stage, workers)
    _jobs(jobs, work.product_jobs(plan, jobs.which), taken, finished, phase, worker, workers)


@numba.njit(**_JIT)
def jobs_phase(plan, step, x, room, taken, finished, b, stage, phase, worker, workers):
    """Block b's attention (ATTEND_ROWS: a row and a KV head a job) or gate (a chunk of a row a job), each job
    by the unfused pass's code for the model's head count or activation (shares.Addressed)."""
    n = x.shape[0]
    if stage == ATTEND_ROWS:
        jobs = Addressed(plan.code[ATTEND], work.attention_jobs(plan, step, room, b, n, workers))
        _jobs(jobs, n * plan.blocks[b, N_KV], taken, finished, phase, worker, workers)
    else:
        jobs = Addressed(plan.code[GATE], work.gate_jobs(plan, x, room, b))
        _jobs(jobs, n * work.gate_chunks(plan, b), taken, finished, phase, worker, workers)


@numba.njit(**_JIT)
def scan_phase(plan, step, x, room, taken, finished, b, stage, phase, worker, workers):
    """Recurrent block b's scan (SCAN_ROWS): a row and a head a job (torque_recurrent.py); compiled only for
    plans with recurrent blocks (Plan.code's SCAN)."""
    n, block = x.shape[0], plan.blocks[b]
    if block[KIND] == MAMBA2:
        _jobs(recurrent.mamba_jobs(plan, step, room, block, n), n * block[N_HEAD], taken, finished, phase, worker,
              workers)
    else:
        _jobs(recurrent.delta_jobs(plan, step, room, block, n), n * block[N_HEAD], taken, finished, phase, worker,
              workers)


@numba.njit(**_JIT, inline="always")
def _jobs(jobs, n_jobs, taken, finished, phase, worker, workers):
    """This worker's jobs of the phase (shares.py), then the wait for the last of them."""
    _finish(finished, phase, take_jobs(jobs, n_jobs, workers, worker, taken[phase]), n_jobs)


@numba.njit(**_JIT, inline="always")
def _finish(finished, phase, done, n_jobs):
    """Count the `done` jobs of the phase this worker did, then wait until all n_jobs are done."""
    arrive(finished[phase], done)
    spins = 0
    while load_acquire(finished[phase]) < n_jobs:
        spins += 1
        if spins % YIELD_SPINS == 0:  # the thread it waits for may be waiting for this core
            yield_thread()
        else:
            spin_pause()
