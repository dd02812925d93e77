#!/usr/bin/env python3
"""Warm Start's gain: time to first token of a long prompt, cold, then repeated with a new last line.

    python scripts/bench_warm_start.py MODEL [--tokens 2000] [-t THREADS]

The second request runs in a new session on the same state folder (a restart), so its state comes from
disk. Prints both times, the ratio, and whether the two answers' first tokens match a cold run of the
second prompt (they must: Warm Start is exact).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session


def long_prompt(session: Session, n_tokens: int, last_line: str) -> list[int]:
    lines, tokens = [], []
    while len(tokens) < n_tokens:
        i = len(lines)
        lines.append(f"def scale_{i}(values):\n    return [v * {i} + {i % 7} for v in values]\n")
        tokens = session.tokenizer.encode("".join(lines), add_special=True)
    return session.tokenizer.encode("".join(lines) + last_line, add_special=True)


def first_token(session: Session, prompt: list[int]) -> tuple[float, int, int]:
    """(seconds to the first token, the token, prompt tokens taken from a kept state)."""
    generation = session.generate(session.new_sequence(), prompt, session.settings({"temp": 0}), 1)
    start = time.perf_counter()
    token = next(iter(generation))
    return time.perf_counter() - start, token, len(generation.context)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("-t", "--threads", type=int)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="kinetic-warm-bench-"))

    def session(off=()) -> Session:
        options = SessionOptions(device="cpu", threads=args.threads, ctx_size=args.tokens + 512, off=off,
                                 state_dir=folder)
        return Session(args.model, options, announce=lambda line: None)

    first = session()
    cold_seconds, _, _ = first_token(first, long_prompt(first, args.tokens, "# the first question\n"))
    first.prompt_states.flush()
    second = session()
    prompt = long_prompt(second, args.tokens, "# another question\n")
    warm_seconds, warm_token, reused = first_token(second, prompt)
    _, cold_token, _ = first_token(session(off=("warm-start",)), prompt)
    print(f"{args.model.name}: {len(prompt)}-token prompt, first token cold {cold_seconds:.2f} s, "
          f"after a restart with a new last line {warm_seconds:.2f} s ({reused} tokens reused): "
          f"{cold_seconds / warm_seconds:.0f}x sooner; same token as cold: {'yes' if warm_token == cold_token else 'NO'}")
    return 0 if warm_token == cold_token else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
