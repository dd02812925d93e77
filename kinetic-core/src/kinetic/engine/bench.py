"""llama-bench's two tests on a runner: pp512 (one 512-token prompt) and tg128 (128 one-token passes)."""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass

import numpy as np

from kinetic.engine.generate import feed
from kinetic.spec.device import Row, Runner


@dataclass(frozen=True)
class BenchResult:
    prefill_tokens_per_second: float
    decode_tokens_per_second: float


def bench_tokens(n_vocab: int, n: int) -> list[int]:
    """Fixed pseudo-random token ids, as llama-bench feeds random tokens."""
    return np.random.default_rng(0).integers(0, n_vocab, n).tolist()


def prefill_seconds(runner: Runner, n_vocab: int, n_prompt: int) -> float:
    seq = runner.new_sequence()
    tokens = bench_tokens(n_vocab, n_prompt)
    start = time.perf_counter()
    feed(runner, seq, tokens)
    return time.perf_counter() - start


def decode_seconds(runner: Runner, n_vocab: int, n_gen: int) -> float:
    """n_gen single-token passes from an empty sequence, each asking for its logits."""
    seq = runner.new_sequence()
    tokens = bench_tokens(n_vocab, n_gen)
    start = time.perf_counter()
    for position, token in enumerate(tokens):
        runner.forward([Row(seq, token, position, logits=True)])
    return time.perf_counter() - start


def run_bench(runner: Runner, n_vocab: int, repetitions: int, n_prompt: int = 512, n_gen: int = 128) -> BenchResult:
    """Best of `repetitions` for each test, after one warm-up pass of each (never timed)."""
    prefill_seconds(runner, n_vocab, min(n_prompt, 8))
    decode_seconds(runner, n_vocab, 2)
    prefill = min(prefill_seconds(runner, n_vocab, n_prompt) for _ in range(repetitions))
    decode = min(decode_seconds(runner, n_vocab, n_gen) for _ in range(repetitions))
    return BenchResult(n_prompt / prefill, n_gen / decode)


def peak_rss_bytes() -> int:
    """The process's peak resident memory (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
