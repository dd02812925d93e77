#!/usr/bin/env python3
"""Shortlist's effect on real text: greedy and top-k answers with it and with --off shortlist, same prompt.

    python scripts/bench_shortlist.py MODEL [-t THREADS] [-n TOKENS] [-r ROUNDS]

Plain decoding (RAD-1 and Warm Start off, so every token is one pass) of a code prompt, greedy and top-k 40
(seed 1), each with and without Shortlist, alternating, best of the rounds; the answers must be the same.
`kinetic bench`'s tg128 decodes pseudo-random tokens, whose flat logits leave Shortlist many more rows to
compute than text does: this measures what a user's generation sees.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session

PROMPT = "def merge_sorted(left, right):\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n"
SETTINGS = {"greedy": {"temp": 0}, "top-k 40": {"temp": 0.8, "top_k": 40, "top_p": 1.0, "min_p": 0.0, "seed": 1}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-n", "--tokens", type=int, default=256)
    parser.add_argument("-r", "--rounds", type=int, default=3)
    args = parser.parse_args()
    sessions = {}
    for name, off in (("on", ()), ("off", ("shortlist",))):
        options = SessionOptions(device="cpu", threads=args.threads, ctx_size=1024, off=("rad1", "warm-start", *off))
        sessions[name] = session = Session(args.model, options, announce=lambda line: None)
        session.settle()
        session.warm_up(session.new_sequence())
    prompt = sessions["on"].tokenizer.encode(PROMPT)
    print(f"{args.model.name}, {args.threads or 'all'} threads, {args.tokens} tokens, best of {args.rounds}")
    for label, settings in SETTINGS.items():
        best, answers = {}, {}
        for _ in range(args.rounds):
            for name, session in sessions.items():
                started = time.perf_counter()
                answers[name] = list(session.generate(session.new_sequence(), prompt, session.settings(settings),
                                                      args.tokens))
                rate = len(answers[name]) / (time.perf_counter() - started)
                best[name] = max(best.get(name, 0.0), rate)
        same = "yes" if answers["on"] == answers["off"] else "NO"
        print(f"  {label:9} Shortlist {best['on']:6.1f} t/s, off {best['off']:6.1f} t/s, "
              f"{best['on'] / best['off']:.2f}x, same answer: {same}")


if __name__ == "__main__":
    main()
