"""What every GPU device's tests check, on a runner of a random model: batches give one-at-a-time bits, sequences
share a pass and truncate exactly, a saved sequence resumes exactly, greedy tokens follow the reference, RAD-1 and
Warm Start change no token; and the random models those tests run on."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import gguf
import numpy as np
import pytest

from kinetic.contracts.device import Row
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.model.load import load_stack
from kinetic.reference.executor import ReferenceRunner
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic.testing.random_weights import random_blocks

# the mix of a Q4_K_M file: Q4_K, with Q6_K for values, down projections (the experts' too) and the embedding,
# F16 output
MIXED = {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K", "ffn_gate": "Q4_K",
         "ffn_up": "Q4_K", "ffn_down": "Q6_K", "ffn_gate_exps": "Q4_K", "ffn_up_exps": "Q4_K",
         "ffn_down_exps": "Q6_K", "in_proj": "Q4_K", "out_proj": "Q4_K", "token_embd": "Q6_K", "output": "F16"}
# a greedy token may part from the reference's only where the reference's top two are closer than the
# largest logit differences allow (in fractions of the logits' spread; measured up to 0.036)
NEAR_TIE = 0.1


def mixed_model(path: Path, arch: str, dims: Dims) -> Path:
    """A random model whose matrices are MIXED's types (random blocks: gguf-py cannot quantize K-quants)."""
    write_random_model(path, arch, dims, weight_type="F32", seed=5)
    rng = np.random.default_rng(11)
    extra = {}
    for tensor in gguf.GGUFReader(path).tensors:
        kind = tensor.name.split(".")[-2] if tensor.name.startswith("blk.") else tensor.name.split(".")[0]
        if tensor.name.endswith(".weight") and kind in MIXED:
            *stacked, rows, k = (int(n) for n in tensor.shape[::-1])  # a stack of experts' matrices: [n, rows, k]
            blocks = random_blocks(MIXED[kind], math.prod(stacked) * rows, k, rng).reshape(*stacked, rows, -1)
            extra[tensor.name] = (blocks, gguf.GGMLQuantizationType[MIXED[kind]])
    return write_random_model(path, arch, dims, weight_type="F32", seed=5, extra_tensors=extra)


def tokens_for(path: Path, n: int) -> list[int]:
    return np.random.default_rng(3).integers(0, load_stack(path).n_vocab, n).tolist()


def in_batches(runner, tokens: list[int], size: int, seq=None) -> np.ndarray:
    """Every token's logits, appended to seq (a new sequence if None) in passes of `size`."""
    seq = seq or runner.new_sequence()
    out = []
    for start in range(0, len(tokens), size):
        chunk = tokens[start : start + size]
        out.append(runner.forward([Row(seq, t, seq.n_tokens + i, parent=i - 1, logits=True)
                                   for i, t in enumerate(chunk)]))
    return np.concatenate(out)


def reference_logits(path: Path, tokens: list[int]) -> np.ndarray:
    return ReferenceRunner(load_stack(path)).new_sequence().forward(tokens)


def assert_batches_equal_one_at_a_time(runner, path: Path, sizes: tuple[int, ...] = (2, 7, 64, 70)) -> None:
    tokens = tokens_for(path, max(sizes))
    single = in_batches(runner, tokens, 1)
    for size in sizes:
        assert np.array_equal(in_batches(runner, tokens, size), single), f"batches of {size} differ from one at a time"


def assert_sequences_share_a_pass_and_truncate(runner, path: Path) -> None:
    """Two sequences' rows in one pass give what each gives alone: prompts, then one-row steps of each, the same
    shape pass after pass (which a device may replay); a truncated sequence replays exactly."""
    a_tokens, b_tokens = tokens_for(path, 12), tokens_for(path, 17)[5:]
    alone = [in_batches(runner, tokens, 9) for tokens in (a_tokens, b_tokens)]
    a, b = runner.new_sequence(), runner.new_sequence()
    rows = [Row(a, t, i, parent=i - 1, logits=True) for i, t in enumerate(a_tokens[:9])]
    rows += [Row(b, t, i, parent=9 + i - 1 if i else -1, logits=True) for i, t in enumerate(b_tokens[:9])]
    assert np.array_equal(runner.forward(rows), np.concatenate([alone[0][:9], alone[1][:9]]))
    for i in range(9, 12):
        step = runner.forward([Row(a, a_tokens[i], i, logits=True), Row(b, b_tokens[i], i, logits=True)])
        assert np.array_equal(step, np.stack([alone[0][i], alone[1][i]])), f"step at position {i}"
    a.truncate(4)
    assert np.array_equal(in_batches(runner, a_tokens[4:], 1, seq=a), alone[0][4:])


def assert_a_saved_sequence_resumes(runner, path: Path) -> bytes:
    """seq.save() and runner.load(blob, into) give back the cache bit for bit: decoding goes on as before; a cut
    blob does not load. Returns the blob."""
    tokens = tokens_for(path, 20)
    seq = runner.new_sequence()
    in_batches(runner, tokens[:12], 12, seq=seq)
    blob = seq.save()
    expected = in_batches(runner, tokens[12:], 1, seq=seq)
    assert np.array_equal(in_batches(runner, tokens[12:], 1, seq=runner.load(blob)), expected)
    other = runner.new_sequence()
    in_batches(runner, tokens[5:9], 4, seq=other)
    assert runner.load(blob, into=other) is other and other.n_tokens == 12
    assert np.array_equal(in_batches(runner, tokens[12:], 8, seq=other), expected)
    with pytest.raises(KineticError, match="does not fit"):
        runner.load(blob[:-2])
    return blob


def assert_greedy_tokens_near_the_references(runner, path: Path) -> None:
    """16 greedy tokens after a prompt; each is the reference's argmax on the same prefix, or within NEAR_TIE."""
    seq = runner.new_sequence()
    prompt = tokens_for(path, 6)
    logits = in_batches(runner, prompt, 6, seq=seq)[-1]
    answer = []
    for _ in range(16):
        answer.append(int(np.argmax(logits)))
        logits = runner.forward([Row(seq, answer[-1], seq.n_tokens, logits=True)])[0]
    reference = reference_logits(path, prompt + answer)[len(prompt) - 1 : -1]
    spread = reference.std(axis=1)
    gaps = reference.max(axis=1) - reference[np.arange(16), answer]
    assert np.all(gaps <= NEAR_TIE * spread), f"greedy tokens part from the reference's: gaps {gaps / spread}"


def assert_rad1_and_warm_start_change_no_token(tmp_path: Path, settings: dict,
                                               options: Callable[..., SessionOptions]) -> None:
    """RAD-1's verified drafts and Warm Start's restored states (from memory, then from disk after a restart) give
    the plain answer token for token; options(off=..., state_dir=...) gives the device's session options."""
    path = write_random_model(tmp_path / "m.gguf", "qwen2", Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512), "Q8_0",
                              seed=5)
    prompt = [1, *range(260, 270), *range(260, 266)]

    def answer(session: Session, last: int) -> tuple[list[int], int]:
        generation = session.generate(session.new_sequence(), prompt + [last], session.settings(settings), 40)
        return list(generation), len(generation.context)

    def session(off: tuple[str, ...]) -> Session:
        return Session(path, options(off=off, state_dir=tmp_path / "warm"), announce=lambda line: None)

    plain, _ = answer(session(("rad1", "warm-start")), 298)
    fast = session(())
    assert answer(fast, 297)[1] == 0
    assert answer(fast, 298) == (plain, len(prompt))
    fast.prompt_states.flush()
    assert answer(session(()), 298) == (plain, len(prompt))
