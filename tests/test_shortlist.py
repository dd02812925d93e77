"""Shortlist (kinetic_cpu/shortlist.py, docs/exactness.md section 8): the bound holds on every row, adversarial ones
included, and the rows a pick reads come out bit for bit as the full output layer gives them, on random layers and
on both real models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kinetic.contracts.device import Row
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.plugins import plugins
from kinetic_cpu.kernels.matmul import Matrix, activations
from kinetic_cpu.shortlist import RETRY, Q8_0, Payoff, Shortlist, split_q8_0, signed_block_sums

README = Path(__file__).resolve().parent.parent / "README.md"


def q8_0_rows(rng, n_rows: int, k: int, quants=None) -> np.ndarray:
    """[n_rows, k / 32 * 34] uint8 Q8_0 rows: scales across four decades, quants given or uniform in -128..127."""
    blocks = np.empty((n_rows, k // 32, 34), np.uint8)
    scales = (10.0 ** rng.uniform(-4, -1, (n_rows, k // 32))).astype(np.float16)
    blocks[:, :, :2] = scales[..., None].view(np.uint8)
    q = rng.integers(-128, 128, (n_rows, k // 32, 32)) if quants is None else quants
    blocks[:, :, 2:] = q.astype(np.int8).view(np.uint8)
    return blocks.reshape(n_rows, -1)


def test_the_copy_is_each_weight_less_its_low_nibble():
    rng = np.random.default_rng(1)
    raw = q8_0_rows(rng, 64, 256)
    copy, largest = split_q8_0(raw)
    types = plugins().tensor_types
    weights = types[Q8_0].dequantize(raw.reshape(-1, 34)).reshape(64, 256)
    copied = types[3].dequantize(copy.reshape(-1, 20)).reshape(64, 256)  # Q4_1: 16 d (q >> 4) + 128 d + d
    q = raw.reshape(64, 8, 34)[:, :, 2:].view(np.int8).astype(np.int64)
    d = raw.reshape(64, 8, 34)[:, :, :2].copy().view(np.float16).astype(np.float64)
    assert np.array_equal(copied.reshape(64, 8, 32), (d * (16 * (q >> 4) + 129)).astype(np.float32))
    assert np.array_equal(weights.reshape(64, 8, 32), (d * (16 * (q >> 4) + (q & 15))).astype(np.float32))
    assert np.array_equal(largest, d[..., 0].max(axis=1).astype(np.float32))


def test_block_sums_of_signs_read_the_group_layout():
    rng = np.random.default_rng(2)
    for k in (32, 128, 256 + 128 + 64):  # groups of 8, of 4 and single blocks
        x = rng.normal(size=(3, k)).astype(np.float32)
        q, d, sums = activations("q8_0", x)
        positive, negative = signed_block_sums(q, k // 32)
        assert np.array_equal(positive - negative, sums)
        assert (positive.sum(axis=1) + negative.sum(axis=1) == np.abs(q.astype(np.int64)).sum(axis=1)).all()


@pytest.mark.parametrize("k", [256, 640, 896])
def test_no_row_scores_above_its_bound_even_when_built_to(k):
    """Rows whose low nibbles are 15 where a token's quant is positive and 0 where negative reach the bound
    (but for rounding); random rows and rows of extreme quants fill out the layer."""
    rng = np.random.default_rng(k)
    x = rng.normal(size=(4, k)).astype(np.float32) * rng.uniform(0.1, 30, (4, 1)).astype(np.float32)
    x[0, :7] = 40.0  # outliers
    acts = activations("q8_0", x)
    block_quants = x.reshape(4, k // 32, 32)  # same signs as the quants (zero quants get either nibble)
    highs = rng.integers(-8, 8, (4, 64, k // 32, 32))
    built = (16 * highs + np.where(block_quants[:, None] > 0, 15, 0)).reshape(256, k // 32, 32)
    extreme = rng.choice([-128, -113, 127, 112], (128, k // 32, 32))
    raw = np.concatenate([q8_0_rows(rng, 256, k, built), q8_0_rows(rng, 128, k, extreme), q8_0_rows(rng, 512, k)])
    layer = Matrix(raw, Q8_0)
    shortlist = Shortlist.of(layer)
    exact = layer(x, acts)
    upper = shortlist.upper_bounds(acts, 4)
    assert (exact <= upper).all()
    own = np.arange(256).reshape(4, 64)  # token t's built rows come close to their bound
    gap = np.take_along_axis(upper - exact, own, axis=1) / np.abs(np.take_along_axis(exact, own, axis=1)).max()
    assert gap.max() < 1e-2


@pytest.mark.parametrize("k", [1, 3])
def test_the_best_rows_are_the_full_layers_bit_for_bit_in_any_batch(k):
    rng = np.random.default_rng(7)
    raw = q8_0_rows(rng, 4096, 256)
    raw.reshape(4096, 8, 34)[:, :, :2] = np.frombuffer(np.float16(0.002).tobytes(), np.uint8)  # one scale: scores close together
    layer = Matrix(raw, Q8_0)
    shortlist = Shortlist.of(layer)
    x = rng.normal(size=(6, 256)).astype(np.float32)
    full = layer(x)
    together = shortlist.logits(x, activations("q8_0", x), [k] * 6)
    for t in range(6):
        alone = shortlist.logits(x[t : t + 1], activations("q8_0", x[t : t + 1]), [k])[0]
        assert np.array_equal(alone, together[t])  # the same rows and scores whatever the batch
        kept = np.isfinite(alone)
        assert np.array_equal(alone[kept], full[t, kept]) and kept.sum() < 4096
        best = np.argsort(-full[t], kind="stable")[:k]
        assert kept[best].all() and np.array_equal(np.argsort(-alone, kind="stable")[:k], best)


def test_a_layer_it_cannot_bound_is_computed_whole():
    raw = q8_0_rows(np.random.default_rng(3), 8, 64)
    raw.reshape(8, 2, 34)[0, 0, :2] = np.frombuffer(np.float16(-0.5).tobytes(), np.uint8)
    assert Shortlist.of(Matrix(raw, Q8_0)) is None
    assert Shortlist.of(Matrix(np.zeros((8, 36), np.uint8), 2)) is None  # Q4_0: not a layer it copies


def test_the_payoff_takes_the_faster_way_and_tries_the_other_again():
    payoff = Payoff()
    ways = []
    for token in range(2 * RETRY):
        way = payoff.shortlist()
        ways.append(way)
        payoff.record(way, 1.0 if way else 2.0)  # the shortlist costs half
    assert ways[:2] == [False, True] and ways.count(False) == 3 and not ways[RETRY - 1] and not ways[-1]
    slower = Payoff()
    for token in range(2 * RETRY):
        way = slower.shortlist()
        slower.record(way, 3.0 if way else 2.0)
    assert slower.seconds == {True: 3.0, False: 2.0} and slower.tokens == 2 * RETRY


def passes(session: Session, tokens: list[int], best: int, size: int = 128):
    """The logits [size, n_vocab] of every row of tokens, fed size rows a pass, each asking for its best."""
    seq = session.runner.new_sequence()
    for start in range(0, len(tokens), size):
        rows = [Row(seq, token, start + i, parent=i - 1, logits=True, best=best)
                for i, token in enumerate(tokens[start : start + size])]
        yield session.runner.forward(rows)


def test_on_real_models_every_pick_and_its_score_is_the_full_layers(real_gguf, monkeypatch):
    """512 positions of real text, each row's best logit shortlisted against the whole layer."""
    monkeypatch.setattr(Payoff, "shortlist", lambda self: True)  # whether or not it pays on this machine
    session = Session(real_gguf, SessionOptions(device="cpu", ctx_size=512, off=("warm-start",)),
                      announce=lambda line: None)
    assert session.best_rows
    tokens = session.tokenizer.encode(README.read_text(), add_special=True)[:512]
    skipped = 0
    for short, full in zip(passes(session, tokens, 1), passes(session, tokens, 0)):
        kept = np.isfinite(short)
        assert np.array_equal(short[kept], full[kept])
        assert np.array_equal(short.argmax(axis=1), full.argmax(axis=1))
        skipped += (~kept).sum()
    assert skipped > 0.5 * len(tokens) * session.tokenizer.n_vocab


def test_on_real_models_greedy_answers_are_those_of_the_full_layer(real_gguf):
    answers = []
    for off in (("warm-start",), ("warm-start", "shortlist")):
        session = Session(real_gguf, SessionOptions(device="cpu", ctx_size=512, off=off), announce=lambda line: None)
        prompt = session.tokenizer.encode("def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.", add_special=True)
        generation = session.generate(session.new_sequence(), prompt, session.settings({"temp": 0.0}), 32)
        answers.append((list(generation), generation.best))
    assert answers[0][0] == answers[1][0] and [best for _, best in answers] == [1, 0]
