#!/usr/bin/env python3
"""Convoy's shared pass: ms per decode pass of N sequences, in one pass or one after another.

    python scripts/bench_shared_pass.py MODEL.gguf [--device cpu|cuda] [-t 2] [--context 200] [--rows 1] [--runs 15]

N = 1, 2, 4 and 8 sequences, each holding --context tokens, decode one token each, or with --rows K add K rows
each asking for its logits (as a draft of K tokens is checked). "shared" runs the N sequences' rows
in one forward, which reads each weight once for all of them; "in turns" runs one forward per sequence, as
the device did before Convoy. Each is the best of --runs, every run timing every N both ways so that a busy
moment hurts one run of each; every pass cuts the sequences back to --context, so each does the same work.
The kernels are compiled and the weights read once before timing. The load average is printed first:
numbers on a busy machine are not the device's speed.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic.plugins import plugins

COUNTS = (1, 2, 4, 8)


def held_sequences(runner, n_vocab: int, context: int, count: int) -> list:
    """count sequences holding the same context tokens (one prompt pass, then its saved state loaded)."""
    tokens = np.random.default_rng(0).integers(0, n_vocab, context).tolist()
    first = runner.new_sequence()
    runner.forward([Row(first, t, p, parent=p - 1) for p, t in enumerate(tokens)])
    blob = first.save()
    return [first] + [runner.load(blob) for _ in range(count - 1)]


def seconds(runner, passes: list[list[Row]], context: int) -> float:
    """Wall time of the passes, each sequence cut back to context after each."""
    start = time.perf_counter()
    for rows in passes:
        runner.forward(rows)
        for seq in {id(row.sequence): row.sequence for row in rows}.values():  # once each, however many rows
            seq.truncate(context)
    return time.perf_counter() - start


def continuing(seqs: list, context: int, k: int) -> list[Row]:
    """k rows continuing each of seqs (held at context tokens), one after another, each asking for its logits."""
    rows: list[Row] = []
    for s, seq in enumerate(seqs):
        first = len(rows)
        rows += [Row(seq, 1 + s + i, context + i, parent=first + i - 1 if i else -1, logits=True) for i in range(k)]
    return rows


def bench(runner, seqs: list, context: int, k: int, runs: int) -> dict[int, tuple[float, float]]:
    """{N: (shared, in turns) ms per pass of k rows for each of the first N of seqs}, best of runs. Every run
    times every N both ways, so a moment the machine is busy elsewhere hurts one run of each."""
    best = {count: [float("inf"), float("inf")] for count in COUNTS}
    for _ in range(runs + 1):  # the first run warms up
        for count in COUNTS:
            shared = [continuing(seqs[:count], context, k)]
            turns = [continuing([seq], context, k) for seq in seqs[:count]]
            for which, passes in enumerate((shared, turns)):
                best[count][which] = min(best[count][which], seconds(runner, passes, context))
    return {count: (shared * 1e3, turns * 1e3) for count, (shared, turns) in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--device", default="cpu", help="a device that shares passes: cpu or cuda")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--context", type=int, default=200, help="tokens each sequence holds")
    parser.add_argument("--rows", type=int, default=1, help="rows each sequence adds a pass (a draft's tokens)")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    stack = load_stack(args.model)
    options = UploadOptions(threads=args.threads, context_length=args.context + args.rows + 16)
    runner = plugins().devices[args.device].upload(stack, options)
    seqs = held_sequences(runner, stack.n_vocab, args.context, max(COUNTS))
    print(f"{args.model.name}, {runner.device_name}, {args.threads or os.cpu_count()} threads, context {args.context}, "
          f"{args.rows} rows a sequence, best of {args.runs}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'N':>3} {'shared ms':>10} {'in turns ms':>12} {'speed-up':>9} {'shared ms/seq':>14}")
    for count, (shared, turns) in bench(runner, seqs, args.context, args.rows, args.runs).items():
        print(f"{count:>3} {shared:>10.1f} {turns:>12.1f} {turns / shared:>8.2f}x {shared / count:>14.1f}")

if __name__ == "__main__":
    main()
