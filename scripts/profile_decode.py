#!/usr/bin/env python3
"""Where a CPU decode step goes: milliseconds and calls per token of each stage of the runner.

    python scripts/profile_decode.py MODEL [-t THREADS] [-n TOKENS] [--off LIST]

Runs bench's tg test (single-token passes of fixed pseudo-random tokens, each asking for its logits) after a
warm-up, with every stage of kinetic_cpu's runner and ops timed by a wrapper. Stages nest (matrix products
run inside attention and the feed-forward), so the rows do not add up to the step; "step" is the whole. The
wrappers cost a few microseconds a call: compare runs of this script with each other, and speeds with
`kinetic bench`. With Torque on (the default), a pass of the blocks is one call (Torque.run), whose stages the
wrappers cannot see: --off torque shows them.
"""

from __future__ import annotations

import argparse
import collections
import functools
import time
from pathlib import Path

from kinetic.engine.bench import decode_seconds
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic_cpu import ops, runner, torque

STAGES = ("_embed", "_attention", "_attend_each", "_feed_forward", "_experts", "_logits", "_linears", "_norm")
OPS = ("rms_norm", "rope_angles", "rope", "to_half", "gate")


def timed(seconds: collections.Counter, calls: collections.Counter, name: str, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - start
            calls[name] += 1

    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-n", "--tokens", type=int, default=64)
    parser.add_argument("--off", default="", help="speed technologies to turn off besides warm-start: torque, ...")
    args = parser.parse_args()
    off = ("warm-start", *filter(None, args.off.split(",")))
    session = Session(args.model, SessionOptions(device="cpu", threads=args.threads, ctx_size=args.tokens + 16,
                                                 off=off), announce=lambda line: None)
    n_vocab = session.tokenizer.n_vocab
    session.settle()
    decode_seconds(session.runner, n_vocab, 8)  # compiled and warm
    seconds, calls = collections.Counter(), collections.Counter()
    for name in STAGES:
        setattr(runner.CpuRunner, name, timed(seconds, calls, name, getattr(runner.CpuRunner, name)))
    for name in OPS:
        setattr(ops, name, timed(seconds, calls, f"ops.{name}", getattr(ops, name)))
    torque.Torque.run = timed(seconds, calls, "Torque.run", torque.Torque.run)
    step = decode_seconds(session.runner, n_vocab, args.tokens) / args.tokens
    print(f"{args.model.name}, {args.threads or 'all'} threads, off: {', '.join(off)}: {1 / step:.1f} t/s")
    print(f"  {'step':16s} {step * 1e3:8.3f} ms/token")
    for name, total in seconds.most_common():
        print(f"  {name:16s} {total / args.tokens * 1e3:8.3f} ms/token {calls[name] / args.tokens:6.1f} calls/token")


if __name__ == "__main__":
    main()
