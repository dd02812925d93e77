#!/usr/bin/env python3
"""What Torque gives: tg (one-token steps of fixed pseudo-random tokens, as kinetic bench's tg128) with Torque on
and with --off torque, the two loaded side by side and measured in turns, so that a shared machine's drift
falls on both alike.

    python scripts/bench_torque.py MODEL [-t THREADS] [-n TOKENS] [-r ROUNDS]

Prints each round's tokens per second, then the best and the median of each.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from kinetic.engine.bench import decode_seconds
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-n", "--tokens", type=int, default=128)
    parser.add_argument("-r", "--rounds", type=int, default=6)
    args = parser.parse_args()
    sessions = {}
    for name, off in (("torque", ("warm-start",)), ("--off torque", ("warm-start", "torque"))):
        options = SessionOptions(device="cpu", threads=args.threads, ctx_size=args.tokens + 16, off=off)
        sessions[name] = Session(args.model, options, announce=lambda line: None)
        sessions[name].settle()
        decode_seconds(sessions[name].runner, sessions[name].tokenizer.n_vocab, 8)  # compiled and warm
    speeds: dict[str, list[float]] = {name: [] for name in sessions}
    for _ in range(args.rounds):
        for name, session in sessions.items():
            seconds = decode_seconds(session.runner, session.tokenizer.n_vocab, args.tokens)
            speeds[name].append(args.tokens / seconds)
    print(f"{args.model.name}, {args.threads or 'all'} threads, tg{args.tokens}, {args.rounds} rounds in turns (t/s)")
    for name, values in speeds.items():
        rounds = " ".join(f"{v:.1f}" for v in values)
        print(f"  {name:13s} best {max(values):6.1f}  median {statistics.median(values):6.1f}  [{rounds}]")


if __name__ == "__main__":
    main()
