"""Jobs shared out over threads: the one work loop of the CPU plugin's parallel kernels (driver.run's row
chunks, ops.attend's head groups, ops.gate's chunks, ops.rms_norm's and the activation quantizers' rows, and
each phase of Torque's fused pass).

Jobs 0 .. n_jobs - 1 are cut into one contiguous share per worker, each share handed out in order from its
own atomic counter. A worker takes the jobs of its own share first, then what is left of the next shares, so
a thread that falls behind (a slow or busy vCPU) takes fewer jobs instead of stalling the rest, and most of a
worker's jobs are neighbours (a share of weight rows streams from memory as one run the hardware prefetcher
follows). A job writes its own outputs and uses only its worker's scratch, so which worker runs it never
changes what it computes.

A kind of job is a NamedTuple of what its jobs read and write, whose class attribute run_job is the compiled
function run_job(jobs, job, worker) that does job number `job` as worker `worker`, picked at compile time from
the NamedTuple's class by the loop that runs them (take_jobs, inlined into driver.run's loop and Torque's pass).

Addressed jobs call their run_job by address (intrinsics.call_at), so its code is compiled once, on its own,
rather than again inside every loop that runs it: numba optimizes a function again with all the code it calls
linked in. Such jobs hold ANY where their run_job was compiled for a token (ir.token: attention's head count, a
gate's activation): every token is an empty array of one-byte records, passed alike, so the code called reads
the token it was compiled for. run_addressed shares them out by one parallel loop for every kind
(share_out_stashed): the jobs travel to it by address (intrinsics.stash), and a small function compiled for
their type (_stashed_job, by stashed_code) reads them back for each job.
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.core.typing.typeof import Purpose, typeof
from numba.extending import overload

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.intrinsics import STASHED, call_at, compiled_address, fetch_add, stash, unstash

ANY = ir.token("any")


def do(jobs, job, worker):
    raise NotImplementedError  # compiled code only


@overload(do, inline="always")
def _do(jobs, job, worker):
    run_job = jobs.instance_class.run_job
    return lambda jobs, job, worker: run_job(jobs, job, worker)


@njit(cache=True, nogil=True, inline="always")  # into its caller: one level of compiled code less (driver.py)
def take_jobs(jobs, n_jobs, workers, worker, taken):  # taken: [workers, 1] int64, zeros before the first worker
    """Worker `worker`'s part of the loop: the jobs it takes from its own share, then from the next ones; how
    many it did."""
    done = 0
    for k in range(workers):
        share = (worker + k) % workers
        first, end = share * n_jobs // workers, (share + 1) * n_jobs // workers
        job = first + fetch_add(taken[share])
        while job < end:
            do(jobs, job, worker)
            done += 1
            job = first + fetch_add(taken[share])
    return done


@njit(cache=True, nogil=True)
def _addressed_job(jobs, job, worker):
    """Job `job` of jobs.jobs, by the code at jobs.address."""
    call_at(jobs.address, (jobs.jobs, job, worker))


class Addressed(NamedTuple):
    """Jobs whose run_job is the code at `address`: jobs.run_job compiled on its own for jobs' types (with its
    token where jobs holds ANY), by intrinsics.compiled_address."""

    address: int
    jobs: tuple
    run_job = _addressed_job


def stashed_code(address: int, jobs: tuple) -> int:
    """run_addressed's code for jobs of this type (with ANY in their token's place, as compiled code builds them):
    the address of _stashed_job compiled for a token naming the type of (address, jobs) (intrinsics.STASHED). The
    name is a digest of the type, the same in every process, so numba's cache keeps what is compiled for it."""
    value_type = typeof((address, jobs), Purpose.argument)
    name = "stashed_" + hashlib.sha256(str(value_type).encode()).hexdigest()[:24]
    STASHED[name] = value_type
    return compiled_address(_stashed_job, (0, 0, 0, ir.token(name)))


def addressed_code(run_job, jobs: tuple) -> tuple[int, int]:
    """run_addressed's address and code for jobs of this type that hold no token: run_job compiled for them
    (intrinsics.compiled_address), and stashed_code."""
    address = compiled_address(run_job, (jobs, 0, 0))
    return address, stashed_code(address, jobs)


@njit(cache=True, nogil=True)
def _stashed_job(jobs_at, job, worker, token):
    """Job `job` of the (address, jobs) that stash left at jobs_at, of the type the token names: by the code at
    address."""
    address, jobs = unstash(jobs_at, token)
    call_at(address, (jobs, job, worker))


@njit(cache=True, nogil=True)
def _run_stashed(jobs, job, worker):
    call_at(jobs.code, (jobs.jobs_at, job, worker, ANY))


class Stashed(NamedTuple):
    """share_out_stashed's jobs: _stashed_job compiled for their type at `code`, reading them at jobs_at."""

    code: int
    jobs_at: int
    run_job = _run_stashed


@njit(cache=True, nogil=True, parallel=True)
def share_out_stashed(code, jobs_at, n_jobs, workers):
    """Every job of the jobs stashed at jobs_at, on `workers` threads: one compiled parallel loop for every kind of
    job, which travel by address (a loop compiled for each kind's types took 1 to 1.5 s of a first load each)."""
    taken = np.zeros((workers, 1), np.int64)  # jobs handed out from each share
    for worker in prange(workers):
        take_jobs(Stashed(code, jobs_at), n_jobs, workers, worker, taken)


@njit(cache=True, nogil=True, inline="always")  # into its caller, as take_jobs
def run_addressed(code, address, jobs, n_jobs, workers):
    """Every job of Addressed(address, jobs): on `workers` threads, or with one worker in order on this thread (for
    work too small to wake the other threads for); code is stashed_code(address, jobs)."""
    if workers == 1:
        for job in range(n_jobs):
            call_at(address, (jobs, job, 0))
    else:
        share_out_stashed(code, stash((address, jobs)), n_jobs, workers)
