"""The CPU matrix product: out = x . W^T for a weight matrix W stored as raw GGUF bytes, any type.

    matmul(weight, type_id, x)     one product
    Matrix(weight, type_id)        a matrix kept for many products (what a device holds): m(x), or
                                   m(x, acts) with acts = activations(m.activations, x) shared by the
                                   matrices that take the same input (q, k and v; gate and up)
    table_products(ms, acts, ts)   several matrices' products in one parallel call, each by a token of acts
    compile_kernels(type_ids)      compile (or load from cache) the kernels of a model's types up front
"""

from __future__ import annotations

import functools
import itertools
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, NamedTuple, Optional

import numba
import numpy as np

from kinetic.plugins import plugins

from kinetic_cpu.kernels import amx, amx_k, block32, groups
from kinetic_cpu.kernels.activations import Q8_0, Q8_K, arrays, quantize_q8_0, quantize_q8_k
from kinetic_cpu.kernels.blocks import as_blocks
from kinetic_cpu.kernels.driver import KERNELS, PAD, matrix_layout, rows, rows_address, run, run_table
from kinetic_cpu.kernels.fallback import dequantizing_matmul
from kinetic_cpu.mapped_pages import drop_pages

TOKEN_TILE = 32  # tokens per product call: their activations stay in L1 while a row's steps pass over them
SERIAL_BYTES = 1 << 17  # below this many weight bytes one thread beats starting the others
KEEP_BYTES = 16 << 20  # weights copied into runs per part
_QUANTIZERS = {"q8_0": quantize_q8_0, "q8_k": quantize_q8_k, "float": lambda x: (x,), "dequantize": lambda x: (x,)}


def activations(kind: str, x: np.ndarray) -> tuple:  # x: [n_tokens, k] float32
    """x as the kernels of `kind` (Matrix.activations) take it: int8 blocks with scales and sums, or x itself."""
    return _QUANTIZERS[kind](np.ascontiguousarray(x, dtype=np.float32))


def zeros_as_activations(kind: str, n: int, k: int) -> tuple:
    """activations(kind, zeros [n, k]), made without compiling a quantizer (for compiling products aside)."""
    if kind == "float":
        return (np.zeros((n, k), np.float32),)
    return arrays(Q8_0 if kind == "q8_0" else Q8_K, n, k, np.zeros)


class Matrix:
    """A weight matrix ready for products: weight [rows, row_bytes] uint8, the raw bytes of GGUF type type_id
    (a zero-copy view of the file's memory map is read as it is, except by the types Matrix lays out), or
    with kept=True, bytes block32.keep_in_runs already laid out."""

    def __init__(self, weight: np.ndarray, type_id: int, kept: bool = False):
        self.type = plugins().tensor_types[type_id]
        if weight.ndim != 2 or weight.dtype != np.uint8 or weight.shape[1] % self.type.type_size:
            raise ValueError(f"{self.type.name} weights must be [rows, whole blocks] uint8, not {weight.dtype} "
                             f"{list(weight.shape)}")  # fmt: skip
        self.weight = weight
        self.rows = weight.shape[0]
        self.k = weight.shape[1] // self.type.type_size * self.type.block_size
        kernel = KERNELS.get(self.type.name)
        self.activations = kernel.activations if kernel else "dequantize"
        self._tiling = _tiling(self.type.name) if amx.AVAILABLE else None  # batches on AMX tiles
        self.blocks = (as_blocks(weight, self.type) if kept else self._laid_out()) if kernel else None
        self._layout = matrix_layout(self.blocks) if kernel else None  # run's
        self._rows_at = {}  # rows' address for run, by the activations' rank (tiles have their own)
        # the most tokens a product runs by the step kernels in one call: more go to AMX tiles, or in parts
        self.step_tokens = min(TOKEN_TILE, self._tiling.min_tokens - 1) if self._tiling is not None else TOKEN_TILE

    def _laid_out(self) -> np.ndarray:
        """The weights as the kernels read them: K-quants and block32's types in groups of 16 rows where there are
        no AMX tiles (groups.py), else block32's kept in runs; every other type as the file has it (zero-copy)."""
        name = self.type.name
        if groups.takes(name) and not amx.AVAILABLE:
            grouped = self._copied(lambda part, out: groups.interleave(part, name, out), groups.GROUP)
            return as_blocks(grouped[: self.rows], self.type, groups.SUFFIX)  # the last group's zero rows after it
        if name in block32.SPECS:
            return as_blocks(self._copied(lambda part, out: block32.keep_in_runs(part, name, out), 1), self.type)
        return as_blocks(self.weight, self.type)

    def _copied(self, lay_out: Callable, rows_at_once: int) -> np.ndarray:
        """The weights laid out by lay_out(part, out), serial code, on a part of whole multiples of rows_at_once
        rows at a time (out of rows_at_once rows where part ends short of them), each of numba's threads its share
        of the rows: the file's pages go as the copy comes."""
        kept = np.empty((-(-self.rows // rows_at_once) * rows_at_once, self.weight.shape[1]), np.uint8)
        share = -(-self.rows // rows_at_once // numba.get_num_threads()) * rows_at_once  # rows a thread
        step = max(1, KEEP_BYTES // self.weight.shape[1] // rows_at_once) * rows_at_once

        def copy(first: int) -> None:
            for start in range(first, min(first + share, self.rows), step):
                end = min(start + step, first + share, self.rows)
                lay_out(self.weight[start:end], kept[start : start + -(-(end - start) // rows_at_once) * rows_at_once])
                drop_pages(self.weight[start:end])

        if share >= self.rows:
            copy(0)
        else:
            list(_layout_threads().map(copy, range(0, self.rows, share)))
        return kept

    def __call__(self, x: np.ndarray, acts: Optional[tuple] = None, threads: Optional[int] = None) -> np.ndarray:
        """[n_tokens, rows] float32 for x [n_tokens, k] float32, on `threads` threads (None: numba's count on
        this thread) where the matrix is large enough to share. Row t is bit for bit what x[t:t + 1] alone
        gives, whatever the batch and the thread count."""
        if x.ndim != 2 or x.shape[1] != self.k:
            shape = f"{self.type.name} matrix [{self.rows}, {self.k}]"
            raise ValueError(f"{shape} does not take activations {list(x.shape)}")
        acts = activations(self.activations, x) if acts is None else acts
        if self.weight.nbytes < SERIAL_BYTES:
            threads = 1
        return self.product(acts, x.shape[0], threads or numba.get_num_threads())

    def product(self, acts: tuple, n_tokens: int, threads: int) -> np.ndarray:
        """The product for prepared activations on `threads` threads (1: this thread alone)."""
        if self.blocks is None:
            return dequantizing_matmul(self.weight, self.type, plugins().tensor_types[0], acts[0])
        out = np.empty((n_tokens, self.rows), np.float32)
        if self._tiling is not None and n_tokens >= self._tiling.min_tokens:  # a decoded tile serves them all
            parts = [(self._tiling.lay_out(*acts), out)]
        elif n_tokens <= TOKEN_TILE:
            parts = [(acts, out)]
        else:  # long prompts run faster in tiles of TOKEN_TILE tokens than in one batch
            parts = [(tuple(a[start : start + TOKEN_TILE] for a in acts), out[start : start + TOKEN_TILE])
                     for start in range(0, n_tokens, TOKEN_TILE)]  # fmt: skip
        for part, tile in parts:
            if threads == 1:
                rows(self.blocks, 0, self.rows, part, np.empty((len(tile) + PAD, 8), np.float32), tile)
            else:
                run(self.rows_address(part, tile), self._layout, part, tile, threads)
        return out

    def rows_address(self, acts: tuple, out: np.ndarray) -> int:
        """run's rows_at (and Torque's) for these activations: the types of a product's arguments follow from the matrix
        and the activations' rank (the step kernels' or the AMX tiles' layout), so it is looked up once."""
        rank = acts[0].ndim
        if rank not in self._rows_at:
            self._rows_at[rank] = rows_address(self.blocks, acts, out)
        return self._rows_at[rank]


@functools.cache
def _layout_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(numba.config.NUMBA_NUM_THREADS, thread_name_prefix="kinetic-layout")


def table_products(matrices: list[Matrix], acts: tuple, tokens: list[int], threads: int) -> np.ndarray:
    """[len(matrices), rows] float32: matrix i times token tokens[i] of acts (as activations(kind, x) gives them), all
    in one parallel call, each row's bits what matrices[i](x[tokens[i]:][:1]) gives. The matrices share a type and
    a row count, and their type has a step kernel; a call per matrix costs a decode step a wake-up of the threads
    each (a mixture of experts' one token runs a dozen of them a layer)."""
    first = matrices[0]
    table = np.array([[m.blocks.ctypes.data, m.blocks.shape[1], t] for m, t in zip(matrices, tokens)], np.int64)
    out = np.empty((len(matrices), first.rows), np.float32)
    rows_at = first.rows_address(tuple(a[:1] for a in acts), out[:1])
    run_table(rows_at, table, first.rows, first.blocks.itemsize, acts, out, threads)
    return out


class Tiling(NamedTuple):
    lay_out: Callable  # acts -> the activations as the type's AMX tiles take them
    min_tokens: int  # batches from this size go to the tiles


def _tiling(name: str) -> Optional[Tiling]:
    """How a type's batches go to AMX tiles, or None for a type they do not take."""
    if name in amx.SPECS:
        return Tiling(amx.tiles, amx.MIN_TOKENS)
    if name in amx_k.SPECS:
        return Tiling(functools.partial(amx_k.tiles, run=amx_k.run_of(name)), amx_k.MIN_TOKENS)
    return None


def matmul(weight: np.ndarray, type_id: int, x: np.ndarray) -> np.ndarray:
    """[n_tokens, rows] float32: each token of x ([n_tokens, k] float32) times each row of the matrix whose
    raw GGUF bytes are weight ([rows, row_bytes] uint8, type type_id). Row t is bit for bit what x[t:t + 1]
    alone gives, whatever the batch and the thread count."""
    return Matrix(weight, type_id)(x)


def compile_kernels(type_ids: Iterable[int], report: Optional[Callable[[str], None]] = None) -> None:
    """Compile the product kernels of these GGUF types, on one thread and on several (or load them from
    numba's on-disk cache), so no timed work pays for it; report(type name) is called before each."""
    for type_id in dict.fromkeys(type_ids):
        kind = plugins().tensor_types[type_id]
        if report is not None:
            report(kind.name)
        k = int(np.lcm(256, kind.block_size))  # whole blocks, and whole steps of every kernel
        matrix = Matrix(np.zeros((2, kind.nbytes(k)), np.uint8), type_id)
        acts = activations(matrix.activations, np.zeros((1, k), np.float32))
        for n_tokens, threads in itertools.product((1, amx.MIN_TOKENS), (1, 2)):  # and AMX tiles, where used
            matrix.product(tuple(np.repeat(a, n_tokens, axis=0) for a in acts), n_tokens, threads)
