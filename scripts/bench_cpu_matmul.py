#!/usr/bin/env python3
"""CPU matrix-product speed: GB/s of weight bytes times tokens, per type and batch size.

    python scripts/bench_cpu_matmul.py [Q8_0 Q5_0 ...] [--tokens 1,8,32] [--runs 7]

Streaming, 1 and 2 threads: each case cycles through enough copies of its matrix (at least 64 MB) that
the weights come from memory as in decoding, not from the last-level cache; wall time, best of --runs, each
timing kinetic_cpu.kernels.Matrix(weight)(x) as a device holds a matrix (activation quantization and call
overhead included). In cache, 1 thread: the first 512 KB of rows again and again through the row driver
itself (driver.rows, no Python between rows), timed in the thread's CPU time, so other processes on the
machine barely change it: the kernel's own speed, what two threads need to exceed half the memory
bandwidth. With n tokens a product reads the weights once for all of them: the figures are weight bytes
times n over the seconds, so a kernel that gives every token the same work prints n times its one-token
figure. Compilation is done before. The load average is printed first: streaming numbers on a busy machine
are not the kernels' speed.
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from kinetic.plugins import plugins
from kinetic.testing.random_weights import random_weights
from kinetic_cpu.kernels import Matrix, activations, compile_kernels
from kinetic_cpu.kernels.driver import PAD, rows

# (type, rows, k): Qwen2.5-Coder 0.5B's shapes (ffn up/gate/down, attention, output) and Gemma 3 270M's ffn
CASES = [
    ("Q8_0", 4864, 896), ("Q8_0", 151936, 896), ("Q5_0", 4864, 896), ("Q5_0", 896, 896),
    ("Q5_0", 151936, 896), ("Q4_K", 640, 2048), ("Q4_K", 896, 4864), ("Q6_K", 640, 2048),
    ("Q6_K", 896, 4864), ("F32", 4864, 896), ("F16", 4864, 896), ("BF16", 4864, 896),
    ("Q4_0", 4864, 896), ("Q4_1", 4864, 896), ("Q5_1", 4864, 896), ("Q2_K", 896, 4864),
    ("Q3_K", 896, 4864), ("Q5_K", 896, 4864), ("IQ4_NL", 4864, 896), ("MXFP4", 4864, 896),
]  # fmt: skip
STREAM_BYTES = 64 << 20
CACHED_BYTES = 512 << 10


def seconds_per_product(matrices: list[Matrix], x: np.ndarray, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        for matrix in matrices:
            matrix(x)
        best = min(best, (time.perf_counter() - start) / len(matrices))
    return best


def in_cache(weight: np.ndarray, type_id: int, x: np.ndarray, runs: int) -> float:
    """GB/s (times tokens) of one thread on the first 512 KB of rows, by the thread's CPU time."""
    matrix = Matrix(weight[: max(1, CACHED_BYTES // weight.shape[1])], type_id)
    acts = activations(matrix.activations, x)
    out, acc = np.empty((len(x), matrix.rows), np.float32), np.empty((len(x) + PAD, 8), np.float32)
    repeats = 50
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        for _ in range(repeats):
            rows(matrix.blocks, 0, matrix.rows, acts, acc, out)
        best = min(best, (time.thread_time() - start) / repeats)
    return matrix.weight.nbytes * len(x) / best / 1e9


def bench(name: str, n_rows: int, k: int, tokens: int, runs: int, rng: np.random.Generator) -> list[float]:
    tensor_type = plugins().tensor_types[name]
    first = random_weights(tensor_type, n_rows, k, rng, quantize=False)
    copies = [first] + [first.copy() for _ in range(STREAM_BYTES // first.nbytes)]
    matrices = [Matrix(weight, tensor_type.id) for weight in copies]
    x = rng.standard_normal((tokens, k), dtype=np.float32)
    speeds = []
    for threads in (1, 2):
        numba.set_num_threads(threads)
        speeds.append(first.nbytes * tokens / seconds_per_product(matrices, x, runs) / 1e9)
    return speeds + [in_cache(first, tensor_type.id, x, runs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("types", nargs="*", help="types to run (default: all cases)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tokens", default="1", help="batch sizes, comma-separated (default 1)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    cases = [case for case in CASES if not args.types or case[0] in args.types]
    compile_kernels(plugins().tensor_types[name].id for name, _, _ in cases)
    print("load average %.1f %.1f %.1f on %d CPUs" % (*os.getloadavg(), os.cpu_count()))
    print(f"{'':38} {'streaming':^21}   {'in cache':^9}")
    print(f"{'type':8} {'rows x k':>14} {'MB':>7} {'tokens':>6} {'1 thread':>10} {'2 threads':>10}   {'1 thread':>9}"
          "  (GB/s of weights x tokens)")
    for name, n_rows, k in cases:
        for tokens in (int(t) for t in args.tokens.split(",")):
            one, two, cached = bench(name, n_rows, k, tokens, args.runs, rng)
            mb = plugins().tensor_types[name].nbytes(n_rows * k) / 1e6
            print(f"{name:8} {f'{n_rows} x {k}':>14} {mb:7.1f} {tokens:6d} {one:10.1f} {two:10.1f}   {cached:9.1f}",
                  flush=True)

if __name__ == "__main__":
    main()
