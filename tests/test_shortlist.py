"""Shortlist (docs/exactness.md, section 7): the logits it gives are the full output layer's, bit for bit,
and every logit among a row's top k is given; its bound holds on rows made to meet it; answers are the same
with it and without."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import quantize

from kinetic.contracts.device import Row
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.plugins import plugins
from kinetic.sampling.chain import exact_top
from kinetic.sampling.settings import SamplingSettings
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic_cpu.kernels import Matrix, activations
from kinetic_cpu.kernels.shortlist import copy_rows, reaches
from kinetic_cpu.shortlist import Shortlist

TOPS = (1, 40)
STEPS = 1000  # steps per real model


def top_rows(logits: np.ndarray, k: int) -> np.ndarray:
    """The k largest logits' rows, by descending logit, ties to the lower row (as top-k keeps them)."""
    rows = np.flatnonzero(logits >= kth_largest(logits, k))
    return rows[np.lexsort((rows, -logits[rows]))][:k]


def kth_largest(logits: np.ndarray, k: int) -> float:
    return np.partition(logits, len(logits) - k)[len(logits) - k]


def assert_shortlisted(short: np.ndarray, full: np.ndarray, k: int) -> None:
    """short gives full's k largest and only full's own values; every row it leaves out is below them."""
    given = np.isfinite(short)
    assert np.array_equal(short[given], full[given])
    assert np.array_equal(top_rows(short, k), top_rows(full, k))
    assert given.sum() >= k and full[~given].max(initial=-np.inf) < kth_largest(full, k)


def final_states(path: Path, n: int, monkeypatch) -> tuple[Shortlist, np.ndarray]:
    """A real model's Shortlist and the activations [n, n_embd] its output layer takes for n tokens of text: a
    prompt asking for every row's top logit, with Shortlist.logits recording what it is given."""
    session = Session(path, SessionOptions(device="cpu", ctx_size=n + 8, off=("warm-start",)), announce=lambda line: None)
    session.settle()
    sources = sorted(Path(__file__).parent.parent.glob("kinetic-core/src/kinetic/**/*.py"))
    tokens = session.tokenizer.encode("\n".join(source.read_text() for source in sources[:40]))[:n]
    states = []

    def record(shortlist, x, tops):
        states.append(x.copy())
        return shortlist.exact(x)

    with monkeypatch.context() as patch:
        patch.setattr(Shortlist, "logits", record)
        seq = session.runner.new_sequence()
        for start in range(0, n, 250):
            session.runner.forward([Row(seq, tokens[p], p, parent=p - start - 1, logits=True, top=1)
                                    for p in range(start, min(n, start + 250))])
    return session.runner._shortlist, np.concatenate(states)


def test_real_models_get_the_full_layers_top_logits(real_gguf, monkeypatch):
    """A thousand tokens of each model, alone (as decoding takes them) and in batches of 50 (drafts)."""
    shortlist, states = final_states(real_gguf, STEPS, monkeypatch)
    assert len(states) == STEPS
    for k in TOPS:
        for start, size in [(at, 1) for at in range(100)] + [(at, 50) for at in range(100, STEPS, 50)]:
            x = states[start : start + size]
            for short, full in zip(shortlist.shortlisted(x, [k] * len(x)), shortlist.exact(x)):
                assert_shortlisted(short, full, k)


def q8_0_matrix(values: np.ndarray) -> tuple[Matrix, np.ndarray]:
    raw = quantize(values, GGMLQuantizationType.Q8_0).reshape(len(values), -1)
    return Matrix(raw, plugins().tensor_types["Q8_0"].id), raw


@pytest.fixture(scope="module")
def adversarial():
    """A Q8_0 layer of 4096 rows of 320 weights (a group of 8 blocks and 2 single blocks) holding exact ties
    (rows 100-109 copy row 0) and near ties (rows 110-149: row 1 with one weight moved by a step), and
    activations meant to break a loose bound: along single rows' copy errors, along row 0, and with one
    outlying dimension."""
    rng = np.random.default_rng(3)
    values = rng.standard_normal((4096, 320)).astype(np.float32)
    values[100:110] = values[0]
    values[110:150] = values[1]
    for row in range(110, 150):
        values[row, rng.integers(320)] += 0.02 * rng.choice([-1, 1])
    exact, raw = q8_0_matrix(values)
    shortlist = Shortlist(exact, raw)
    weights = plugins().tensor_types["Q8_0"].dequantize(raw.reshape(-1, 34)).reshape(4096, 320)
    copy = plugins().tensor_types["Q4_1"].dequantize(copy_rows(raw)[0].reshape(-1, 20)).reshape(4096, 320)
    errors = weights - copy
    xs = [rng.standard_normal(320).astype(np.float32) for _ in range(4)]
    xs += [errors[row] / np.linalg.norm(errors[row]) for row in (0, 1, 7, 2000)]
    xs += [weights[0], weights[1] + 0.1 * errors[1]]
    spike = rng.standard_normal(320).astype(np.float32)
    spike[77] = 300.0
    return shortlist, np.array([*xs, spike], np.float32), errors


@pytest.mark.parametrize("k", [1, 5, 40])
def test_rows_made_to_meet_the_bound_keep_the_full_layers_top(adversarial, k):
    shortlist, xs, _ = adversarial
    for x in xs:
        assert_shortlisted(shortlist.shortlisted(x[None], [k])[0], shortlist.exact(x[None])[0], k)


def test_the_bound_holds_and_is_met_along_a_rows_error(adversarial):
    shortlist, xs, errors = adversarial
    acts = activations("q8_0", xs)
    exact, copy = shortlist.exact(xs, acts), shortlist.copy(xs, acts)
    reach = reaches(acts[0], acts[1])[:, None]  # ||x~||
    assert (np.abs(exact.astype(np.float64) - copy) <= shortlist.radius * reach).all()
    for t, row in zip(range(4, 8), (0, 1, 7, 2000)):  # x along the row's copy error: |z - c| near R ||x~||
        assert exact[t, row] - copy[t, row] > 0.95 * shortlist.radius[row] * reach[t, 0]


def test_a_batch_of_rows_with_other_tops_gets_each_its_own(adversarial):
    shortlist, xs, _ = adversarial
    tops = [1 + t % 7 for t in range(len(xs))]
    short, full = shortlist.shortlisted(xs, tops), shortlist.exact(xs)
    for t, k in enumerate(tops):
        assert_shortlisted(short[t], full[t], k)


def test_rows_without_a_top_get_every_logit_whichever_way_is_taken(adversarial):
    shortlist, xs, _ = adversarial
    tops = [0, 3] * (len(xs) // 2)
    full = shortlist.exact(xs[: len(tops)])
    for _ in range(4):  # whichever way each pass takes
        given = shortlist.logits(xs[: len(tops)], tops)
        assert np.array_equal(given[::2], full[::2])
        for t in range(1, len(tops), 2):
            assert_shortlisted(given[t], full[t], 3)


def test_the_copy_takes_only_its_types():
    kinds = plugins().tensor_types
    assert Shortlist.takes(kinds["Q8_0"]) and not Shortlist.takes(kinds["Q4_K"])


@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.8, "top_k": 40, "seed": 7}],
                         ids=["greedy", "top-k"])
def test_answers_are_the_same_with_and_without_shortlist(gemma_gguf, settings):
    prompt = "def merge_sorted(left, right):\n    \"\"\"Merge two sorted lists into one sorted list.\"\"\"\n"
    answers = []
    for off in ((), ("shortlist",)):
        session = Session(gemma_gguf, SessionOptions(device="cpu", ctx_size=512, off=("warm-start", *off)),
                          announce=lambda line: None)
        assert ("shortlist" in [t.name for t in session.speed_on]) == (not off)
        tokens = session.tokenizer.encode(prompt)
        answers.append(list(session.generate(session.new_sequence(), tokens, session.settings(settings), 96)))
    assert answers[0] == answers[1]


def test_shortlist_is_off_where_the_output_layer_has_no_copy(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q4_0")
    session = Session(path, SessionOptions(device="cpu", ctx_size=64), announce=lambda line: None)
    assert "shortlist" in [t.name for t in session.speed_off]


@pytest.mark.parametrize(("settings", "top"), [
    ({"temp": 0}, 1),
    ({}, 40),  # llama.cpp's defaults: top-k 40, then top-p and min-p among those
    ({"temp": 0, "typical_p": 0.5}, 40),  # typical may drop the likeliest, but only among the top 40
    ({"temp": 0, "typical_p": 0.5, "top_k": 0}, 0),
    ({"top_k": 0}, 0),
    ({"top_k": 1000}, 0),  # all of a 1000-token vocabulary
    ({"repeat_penalty": 1.1}, 0),
    ({"presence_penalty": 0.5}, 0),
    ({"logit_bias": {3: 1.0}}, 0),
    ({"dry_multiplier": 0.8}, 0),
    ({"top_n_sigma": 1.0}, 0),
    ({"mirostat": 2}, 0),
])
def test_exact_top_is_what_the_chain_reads(settings, top):
    assert exact_top(SamplingSettings(**settings), 1000) == top
