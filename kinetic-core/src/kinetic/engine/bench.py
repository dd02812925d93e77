"""llama-bench's two tests on a runner, pp512 (one 512-token prompt) and tg128 (128 one-token passes), and
edit256: 256 greedy tokens of an answer that rewrites a short Rust file, drafted as an editing request is."""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from kinetic.contracts.device import Row, Runner
from kinetic.contracts.drafting import Drafter
from kinetic.engine.generate import Generation, feed


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
    """n_gen single-token passes from an empty sequence, each asking for the logits a greedy pick reads."""
    seq = runner.new_sequence()
    tokens = bench_tokens(n_vocab, n_gen)
    start = time.perf_counter()
    for position, token in enumerate(tokens):
        runner.forward([Row(seq, token, position, logits=True, top=1)])
    return time.perf_counter() - start


def run_bench(runner: Runner, n_vocab: int, repetitions: int, n_prompt: int = 512, n_gen: int = 128) -> BenchResult:
    """Best of `repetitions` for each test, after one warm-up pass of each (never timed)."""
    prefill_seconds(runner, n_vocab, min(n_prompt, 8))
    decode_seconds(runner, n_vocab, 2)
    prefill = min(prefill_seconds(runner, n_vocab, n_prompt) for _ in range(repetitions))
    decode = min(decode_seconds(runner, n_vocab, n_gen) for _ in range(repetitions))
    return BenchResult(n_prompt / prefill, n_gen / decode)


def peak_rss_bytes() -> int:
    """The process's peak resident memory (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


EDIT_TOKENS = 256
EDIT_FILE = """use std::collections::HashMap;

/// Counts how often each word occurs in a text.
fn count_words(text: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for word in text.split_whitespace() {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        if !word.is_empty() {
            *counts.entry(word).or_insert(0) += 1;
        }
    }
    counts
}

/// The n most frequent words, most frequent first.
fn top_words(counts: &HashMap<String, usize>, n: usize) -> Vec<(String, usize)> {
    let mut pairs: Vec<(String, usize)> = counts.iter().map(|(w, c)| (w.clone(), *c)).collect();
    pairs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    pairs.truncate(n);
    pairs
}

fn main() {
    let text = "the quick brown fox jumps over the lazy dog the end";
    let counts = count_words(text);
    for (word, count) in top_words(&counts, 3) {
        println!("{word}: {count}");
    }
}
"""


# The editing request as a raw prompt: the file, then the start of its rewrite with one name changed.
EDIT_TEXT = f"// words.rs\n{EDIT_FILE}\n// words.rs again, with `counts` renamed to `tally`:\n"


def edit_prompt(encode: Callable[[str], list[int]]) -> list[int]:
    return encode(EDIT_TEXT)


def edit_run(runner: Runner, prompt: list[int], context_length: int, drafter: Optional[Drafter]) -> tuple[list[int], float]:
    """EDIT_TOKENS greedy tokens after prompt (an end-of-text token does not stop them) and their seconds."""
    generation = Generation(runner, runner.new_sequence(), prompt, lambda logits, history, index: int(np.argmax(logits)),
                            EDIT_TOKENS, context_length, frozenset(), drafter=drafter)
    tokens = list(generation)
    return tokens, generation.timings.generate_seconds
