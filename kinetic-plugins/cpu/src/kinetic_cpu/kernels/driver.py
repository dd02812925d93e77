"""The row driver: every weight type's matrix product, threads splitting output rows, never sums.

Rows go out to threads in chunks of ROWS, shared out as shares.py shares out every parallel kernel's jobs.
Each row is walked once in steps (kernel.py), each step decoded once for the whole batch; an output is the
fixed tree of its 8 lanes, each lane the sum of its steps' values in step order: the same for any batch
size, thread count or row position.

The type's kernel is picked at compile time from the weight's block record (blocks.py) through the
overloads below: one compiled specialization of rows per weight type. run, the parallel loop, calls rows
through its address (rows_address, intrinsics.call_at) rather than linking rows' code into its own: numba
optimizes a caller's code again with every callee linked in, so a linked kernel would be compiled once more
for each level of the loop (the parallel function, its body, the jobs), which took most of the first load.
run takes the matrix by address too (intrinsics.blocks_at), so one compiled run serves every weight type
whose kernels take the same activations.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange
from numba.extending import overload

from kinetic_cpu.kernels import amx, amx_k, block32, floats, groups, ir, kquants
from kinetic_cpu.kernels.intrinsics import blocks_at, call_at, compiled_address, prefetch
from kinetic_cpu.kernels.kernel import lanes_sum
from kinetic_cpu.kernels.shares import take_jobs

KERNELS = {**block32.KERNELS, **kquants.KERNELS, **floats.KERNELS}
ROWS = 64  # rows per chunk: 4 AMX tiles, and still small enough for an even split over threads of unequal speed
PREFETCH = 4096  # bytes ahead of a call that it asks the caches for: a worker's rows stream as one run
PAD = 2  # spare acc rows (of 8 float32) after each worker's, so workers never write one cache line


def kernel_of(w_type):
    """The Kernel for a numba array type of block records (the record's one field is named by the type, and
    groups' suffix where it lays the rows out)."""
    return KERNELS[ir.record_name(w_type).removesuffix(groups.SUFFIX)]


def full_steps(w):
    raise NotImplementedError  # compiled code only


def full(w, at, s, acts, acc):
    raise NotImplementedError


def half_steps(w):
    raise NotImplementedError


def full_bytes(w):
    raise NotImplementedError


def half(w, at, s, acts, acc):
    raise NotImplementedError


def one(w, at, s, acts, acc):
    raise NotImplementedError


@overload(full_steps, inline="always")
def _full_steps(w):
    n = kernel_of(w).full_steps
    return lambda w: n


@overload(full_bytes, inline="always")
def _full_bytes(w):
    """The bytes a full call reads, a constant, so that the loop prefetching them is unrolled."""
    n = kernel_of(w).full_steps * w.dtype.size
    return lambda w: n


@overload(full, inline="always")
def _full(w, at, s, acts, acc):
    impl = kernel_of(w).full
    return lambda w, at, s, acts, acc: impl(w, at, s, acts, acc)


@overload(half_steps, inline="always")
def _half_steps(w):
    n = kernel_of(w).full_steps // 2 if kernel_of(w).half is not None else 0
    return lambda w: n


@overload(half, inline="always")
def _half(w, at, s, acts, acc):
    impl = kernel_of(w).half
    if impl is None:
        return lambda w, at, s, acts, acc: None
    return lambda w, at, s, acts, acc: impl(w, at, s, acts, acc)


@overload(one, inline="always")
def _one(w, at, s, acts, acc):
    impl = kernel_of(w).one
    return lambda w, at, s, acts, acc: impl(w, at, s, acts, acc)


def rows_of(w, r0, r1, acts, acc, out):
    raise NotImplementedError


@overload(rows_of, inline="always")
def _rows_of(w, r0, r1, acts, acc, out):
    """Matrices laid out in groups of rows (groups.py), AMX tiles for activations laid out as tiles (amx.tiles,
    amx_k.tiles), else the type's step kernels."""
    if ir.record_name(w).endswith(groups.SUFFIX):
        return lambda w, r0, r1, acts, acc, out: groups.group_rows(w, r0, r1, acts, out)
    if acts[0].ndim == 5:
        tiled = amx_k.row_tiles if ir.record_name(w) in amx_k.SPECS else amx.row_tiles
        return lambda w, r0, r1, acts, acc, out: tiled(w, r0, r1, acts, out)
    return lambda w, r0, r1, acts, acc, out: step_rows(w, r0, r1, acts, acc, out)


def rows_picked(w, picked, acts, acc, group, out):
    raise NotImplementedError  # compiled code only: the overload below


@overload(rows_picked, inline="always")
def _rows_picked(w, picked, acts, acc, group, out):
    """out[:, r] for each row r in picked (ascending): a matrix in groups of rows computes each group that holds
    one into group [n, 16] (groups.group_columns), any other row by row."""
    if ir.record_name(w).endswith(groups.SUFFIX):
        return lambda w, picked, acts, acc, group, out: groups.group_columns(w, picked, acts, group, out)

    def by_row(w, picked, acts, acc, group, out):
        for r in picked:
            rows_of(w, r, r + 1, acts, acc, out)

    return by_row


@njit(cache=True, nogil=True)
def rows(w, r0, r1, acts, acc, out):  # acc: [n + PAD, 8] float32 scratch (step kernels); out: [n, rows] float32
    """Rows r0 .. r1 - 1 of out, on this thread."""
    rows_of(w, r0, r1, acts, acc, out)


@njit(cache=True, nogil=True)
def step_rows(w, r0, r1, acts, acc, out):
    """Rows r0 .. r1 - 1 of out by the type's step kernels."""
    n, steps, size = out.shape[0], w.shape[1], w.itemsize
    step = full_steps(w)
    for r in range(r0, r1):
        for t in range(n):  # loops, not slices: numba compiles slice assignment slowly
            for lane in range(8):
                acc[t, lane] = 0.0
        at = r * steps * size
        s = 0
        while s + step <= steps:
            for line in range(0, full_bytes(w), 64):  # the bytes this call reads, PREFETCH ahead
                prefetch(w, at + s * size + PREFETCH + line)
            full(w, at + s * size, s, acts, acc)
            s += step
        if half_steps(w) > 0 and s + half_steps(w) <= steps:  # at most one: fewer than a full call remain
            half(w, at + s * size, s, acts, acc)
            s += half_steps(w)
        while s < steps:
            one(w, at + s * size, s, acts, acc)
            s += 1
        for t in range(n):
            out[t, r] = lanes_sum(acc, t)


@njit(cache=True, nogil=True, inline="always")  # inlined: its own compiled code would be one more level
def _row_chunk(jobs, chunk, worker):
    """Rows chunk * ROWS .. of out, with the worker's acc."""
    r0 = chunk * ROWS
    w = blocks_at(jobs.at, jobs.rows, jobs.steps, jobs.size)
    call_at(jobs.rows_at, (w, r0, min(jobs.rows, r0 + ROWS), jobs.acts, jobs.acc[worker], jobs.out))


class RowChunks(NamedTuple):
    """run's jobs (shares.py): chunk c is rows c * ROWS .. (c + 1) * ROWS - 1 of out."""

    rows_at: int  # the address of rows compiled for these arguments (rows_address)
    at: int  # the matrix's blocks' address
    rows: int
    steps: int  # blocks a row
    size: int  # bytes a block
    acts: tuple  # the activations the type's kernel takes
    acc: np.ndarray  # [workers, n + PAD, 8] float32 scratch
    out: np.ndarray  # [n_tokens, rows] float32
    run_job = _row_chunk


@njit(cache=True, nogil=True, parallel=True)
def run(rows_at, matrix, acts, out, threads):  # out: [n_tokens, rows] float32
    """out[t, r] = row r of the matrix . token t of acts (the activations the type's kernel takes), on `threads`
    threads (numba.get_num_threads(): compiled code asking for it could not be cached); matrix is
    matrix_layout(w) of its [rows, steps] block records w, which the caller keeps alive; rows_at is
    rows_address(w, acts, out).

    Each worker owns a contiguous share of the chunks (shares.py), so its weights stream from memory as one
    sequential run. The jobs are built inside the parallel loop, as numba's parallel loops cannot take
    apart a NamedTuple holding a tuple (acts)."""
    at, n_rows, steps, size = matrix
    n_chunks = (n_rows + ROWS - 1) // ROWS
    workers = max(1, min(threads, n_chunks))
    acc = np.empty((workers, out.shape[0] + PAD, 8), np.float32)
    taken = np.zeros((workers, 1), np.int64)  # chunks handed out from each share
    for worker in prange(workers):
        take_jobs(RowChunks(rows_at, at, n_rows, steps, size, acts, acc, out), n_chunks, workers, worker, taken)


def matrix_layout(w: np.ndarray) -> tuple[int, int, int, int]:
    """run's matrix argument for block records w [rows, steps]: their address, rows, steps and bytes a block."""
    return w.ctypes.data, w.shape[0], w.shape[1], w.itemsize


def row_of(acts, i):
    raise NotImplementedError  # compiled code only


@overload(row_of, inline="always")
def _row_of(acts, i):
    """acts (the one, two or three arrays of a kind of activations) at token i alone, each [1, ...]."""
    if len(acts) == 1:
        return lambda acts, i: (acts[0][i : i + 1],)
    if len(acts) == 2:
        return lambda acts, i: (acts[0][i : i + 1], acts[1][i : i + 1])
    return lambda acts, i: (acts[0][i : i + 1], acts[1][i : i + 1], acts[2][i : i + 1])


@njit(cache=True, nogil=True, inline="always")
def _table_chunk(jobs, job, worker):
    """Rows chunk * ROWS .. of table row m's matrix against its token of acts, into out[m]."""
    m, r0 = job // jobs.chunks, job % jobs.chunks * ROWS
    w = blocks_at(jobs.table[m, 0], jobs.rows, jobs.table[m, 1], jobs.size)
    call_at(jobs.rows_at, (w, r0, min(jobs.rows, r0 + ROWS), row_of(jobs.acts, jobs.table[m, 2]), jobs.acc[worker],
                           jobs.out[m : m + 1]))


class TableChunks(NamedTuple):
    """run_table's jobs (shares.py): job j is chunk j % chunks of matrix j // chunks."""

    rows_at: int  # the address of rows compiled for one matrix and one token (rows_address)
    table: np.ndarray  # [matrices, 3] int64: a matrix's blocks' address, its blocks a row, its token of acts
    rows: int  # every matrix's
    size: int  # bytes a block
    chunks: int  # chunks a matrix
    acts: tuple
    acc: np.ndarray  # [workers, 1 + PAD, 8] float32 scratch
    out: np.ndarray  # [matrices, rows] float32
    run_job = _table_chunk


@njit(cache=True, nogil=True, parallel=True)
def run_table(rows_at, table, rows, size, acts, out, threads):  # out: [matrices, rows] float32
    """out[m] = matrix m . its token of acts for every row m of table (the matrices: one type, `rows` rows each, at
    the addresses it gives), on `threads` threads in one parallel call; each output row is what run gives it."""
    chunks = (rows + ROWS - 1) // ROWS
    n_jobs = table.shape[0] * chunks
    workers = max(1, min(threads, n_jobs))
    acc = np.empty((workers, 1 + PAD, 8), np.float32)
    taken = np.zeros((workers, 1), np.int64)
    for worker in prange(workers):
        take_jobs(TableChunks(rows_at, table, rows, size, chunks, acts, acc, out), n_jobs, workers, worker, taken)


def rows_address(w, acts, out) -> int:
    """The address of rows compiled (or loaded from numba's cache) for run's jobs on these arguments: their
    types, not their values, matter, and must be those run is then given."""
    return compiled_address(rows, (w, 0, 0, acts, np.empty((1, 8), np.float32), out))
