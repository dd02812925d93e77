#!/usr/bin/env python3
"""What a grammar costs a decoding step: the mask's time per token against the step's, on a real model.

    python scripts/bench_grammar.py MODEL [-t THREADS] [-n TOKENS] [-r REPEATS]

Generates the same greedy JSON answer (a JSON Schema) with RAD-1 drafting off and on, and prints per token:
the time spent in the grammar (the mask and the move past the picked token), the whole token, and their
ratio, best of -r runs; then the free answer's time per token without a grammar, for comparison.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from kinetic.constraints import Grammar, Matcher
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"},
                                           "landmarks": {"type": "array", "items": {"type": "string"}}},
          "required": ["city", "population", "landmarks"]}
PROMPT = "The largest city of France, its population and five landmarks, as JSON:\n"


class TimedMatcher(Matcher):
    spent = 0.0

    def mask(self, logits):
        started = time.perf_counter()
        try:
            return super().mask(logits)
        finally:
            TimedMatcher.spent += time.perf_counter() - started

    def accept(self, token):
        started = time.perf_counter()
        super().accept(token)
        TimedMatcher.spent += time.perf_counter() - started


def run(session: Session, grammar, n: int) -> tuple[int, float, float]:
    """(tokens, seconds generating, seconds in the grammar) of one greedy answer."""
    TimedMatcher.spent = 0.0
    prompt = session.tokenizer.encode(PROMPT, add_special=True)
    generation = session.generate(session.new_sequence(), prompt, session.settings({"temp": 0}), n, grammar=grammar)
    tokens = list(generation)
    return len(tokens), generation.timings.generate_seconds, TimedMatcher.spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("-n", type=int, default=96)
    parser.add_argument("-r", type=int, default=3)
    args = parser.parse_args()
    import kinetic.engine.session as session_module

    session_module.Matcher = TimedMatcher
    grammar = Grammar.from_json_schema(SCHEMA)
    for off in (("warm-start", "rad1"), ("warm-start",)):
        session = Session(args.model, SessionOptions(threads=args.threads, ctx_size=1024, off=off),
                          announce=lambda line: None)
        session.warm_up(session.new_sequence())
        label = "drafting on " if "rad1" not in off else "drafting off"
        best = min((run(session, grammar, args.n) for _ in range(args.r)), key=lambda r: r[1] / r[0])
        n, seconds, spent = best
        print(f"{label}: {n} tokens, {1000 * seconds / n:.2f} ms a token, grammar {1000 * spent / n:.3f} ms a "
              f"token ({100 * spent / seconds:.1f}%)")
        free = min((run(session, None, args.n) for _ in range(args.r)), key=lambda r: r[1] / r[0])
        print(f"{label}, no grammar: {free[0]} tokens, {1000 * free[1] / free[0]:.2f} ms a token")


if __name__ == "__main__":
    main()
