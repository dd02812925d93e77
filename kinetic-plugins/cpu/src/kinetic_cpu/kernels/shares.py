"""Jobs shared out over threads: the one work loop of the CPU plugin's parallel kernels (driver.run's row
chunks, ops.attend's head groups, ops.gate's chunks, and each phase of Torque's fused pass).

Jobs 0 .. n_jobs - 1 are cut into one contiguous share per worker, each share handed out in order from its
own atomic counter. A worker takes the jobs of its own share first, then what is left of the next shares, so
a thread that falls behind (a slow or busy vCPU) takes fewer jobs instead of stalling the rest, and most of a
worker's jobs are neighbours (a share of weight rows streams from memory as one run the hardware prefetcher
follows). A job writes its own outputs and uses only its worker's scratch, so which worker runs it never
changes what it computes.

A kind of job is a NamedTuple of what its jobs read and write, whose class attribute run_job is the compiled
function run_job(jobs, job, worker) that does job number `job` as worker `worker`; the loop is compiled once
per kind, with that function picked at compile time from the NamedTuple's class. Compiled code builds the
NamedTuple and calls run_jobs: numba takes a NamedTuple from Python several times slower than its fields.

Addressed jobs call their run_job by address (intrinsics.call_at), so its code is compiled once, on its own,
rather than again inside every loop that runs it: numba optimizes a function again with all the code it calls
linked in. Such jobs hold ANY where their run_job was compiled for a token (ir.token: attention's head count, a
gate's activation): every token is an empty array of one-byte records, passed alike, so the code called reads
the token it was compiled for.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.extending import overload

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.intrinsics import call_at, fetch_add

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


@njit(cache=True, nogil=True, parallel=True)
def share_out(jobs, n_jobs, workers):
    """Every job, on `workers` threads. numba's parallel loops take a NamedTuple's fields apart, one level
    deep: the fields of jobs are arrays and numbers (driver.run, whose jobs hold a tuple of activations,
    builds them inside its own parallel loop around take_jobs)."""
    taken = np.zeros((workers, 1), np.int64)  # jobs handed out from each share
    for worker in prange(workers):
        take_jobs(jobs, n_jobs, workers, worker, taken)


@njit(cache=True, nogil=True, parallel=True)
def share_out_at(address, jobs, n_jobs, workers):
    """share_out of Addressed(address, jobs): numba's parallel loops take only one level of a NamedTuple apart,
    so the Addressed jobs are made inside the loop."""
    taken = np.zeros((workers, 1), np.int64)
    for worker in prange(workers):
        take_jobs(Addressed(address, jobs), n_jobs, workers, worker, taken)


def share(jobs, n_jobs, workers):
    raise NotImplementedError  # compiled code only


@overload(share, inline="always")
def _share(jobs, n_jobs, workers):
    """share_out, or share_out_at for Addressed jobs."""
    if jobs.instance_class is Addressed:
        return lambda jobs, n_jobs, workers: share_out_at(jobs.address, jobs.jobs, n_jobs, workers)
    return lambda jobs, n_jobs, workers: share_out(jobs, n_jobs, workers)


@njit(cache=True, nogil=True, inline="always")  # into its caller, as take_jobs
def run_jobs(jobs, n_jobs, workers):
    """Every job: on `workers` threads, or with one worker in order on this thread (for work too small to wake
    the other threads for)."""
    if workers == 1:
        for job in range(n_jobs):
            do(jobs, job, 0)
    else:
        share(jobs, n_jobs, workers)
