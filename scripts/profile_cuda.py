#!/usr/bin/env python3
"""Where a CUDA pass goes, kernel by kernel: run a 512-token prompt and 4 decode steps of a scripts/bench_gpu.py
shape (cut to a few layers) under Nsight Compute, then sum its kernel times per kernel.

    ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \\
        --log-file ncu.csv python scripts/profile_cuda.py --model 30b-a3b --layers 4
    python scripts/profile_cuda.py --summarize ncu.csv

The profiled region is marked with cudaProfilerStart/Stop (--profile-from-start off), after a warm-up prompt
and 64 timed decode steps whose speed is printed. ncu runs kernels one at a time, so the sums are each
kernel's own time, without launch gaps: compare kernels with each other, and speeds with bench_gpu.py.
"""

from __future__ import annotations

import argparse
import collections
import csv
import time
from pathlib import Path

import numpy as np

from bench_gpu import SHAPES, write_model
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic.plugins import plugins

PROMPT, STEPS = 512, 4


def passes(runner, seq, tokens: list[int], steps: int) -> None:
    """A prompt of PROMPT tokens, then `steps` one-token steps, from an empty sequence."""
    seq.truncate(0)
    runner.forward([Row(seq, t, p, parent=p - 1, logits=p == PROMPT - 1) for p, t in enumerate(tokens[:PROMPT])])
    for p in range(PROMPT, PROMPT + steps):
        runner.forward([Row(seq, tokens[p], p, logits=True)])


def profile(name: str, layers: int, folder: Path) -> None:
    import cupy

    shape = SHAPES[name]._replace(n_layer=layers, label=f"{SHAPES[name].label}-{layers}l")
    path = folder / f"{shape.label}-shape-q4_k_m.gguf"
    if not path.exists():
        write_model(path, shape)
    runner = plugins().devices["cuda"].upload(load_stack(path), UploadOptions(context_length=4096))
    seq = runner.new_sequence()
    tokens = np.random.default_rng(1).integers(0, shape.n_vocab, PROMPT + 64).tolist()
    passes(runner, seq, tokens, 8)
    cupy.cuda.runtime.deviceSynchronize()
    start = time.perf_counter()
    for p in range(PROMPT + 8, PROMPT + 64):
        runner.forward([Row(seq, tokens[p], p, logits=True)])
    cupy.cuda.runtime.deviceSynchronize()
    print(f"{shape.label}: decode {56 / (time.perf_counter() - start):.1f} t/s after a {PROMPT}-token prompt")
    cupy.cuda.profiler.start()
    passes(runner, seq, tokens, STEPS)
    cupy.cuda.runtime.deviceSynchronize()
    cupy.cuda.profiler.stop()


def summarize(log: Path) -> None:
    """Each kernel's calls and microseconds, in the prompt and per decode step (the region's first kernel is the
    prompt's embedding lookup; each later lookup starts a step)."""
    lines = log.read_text().splitlines()
    rows = list(csv.DictReader(lines[next(i for i, line in enumerate(lines) if line.startswith('"ID"')):]))
    starts = [i for i, row in enumerate(rows) if row["Kernel Name"].startswith("embed_")]
    for title, part, per in (("prompt", rows[: starts[1]], 1), ("decode step", rows[starts[1] :], len(starts) - 1)):
        times, calls = collections.Counter(), collections.Counter()
        for row in part:
            name = row["Kernel Name"].split("(")[0]
            times[name] += float(row["Metric Value"].replace(",", "")) / 1e3  # ns -> us
            calls[name] += 1
        print(f"== {title}: {sum(times.values()) / per:.1f} us")
        for name, us in times.most_common():
            print(f"{name:32} {calls[name] / per:6.1f} calls {us / per:10.1f} us {us / calls[name]:8.1f} us a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="30b-a3b", choices=SHAPES)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kinetic-bench"))
    parser.add_argument("--summarize", type=Path, help="an ncu --csv log of a run of this script")
    args = parser.parse_args()
    if args.summarize:
        summarize(args.summarize)
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    profile(args.model, args.layers, args.dir)


if __name__ == "__main__":
    main()
