"""RAD-1: drafted decoding gives, token for token, what plain decoding gives: greedy and seeded sampling
under several sampler settings, for every family on random-weight files and on both real models (with either
KV cache type); guesses
that are rolled back leave no trace in the KV cache. Also the drafter's sources and policy."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Sequence

import numpy as np
import pytest
from usable_devices import DEVICES, device_or_skip

from kinetic.contracts.device import Row
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.reference.executor import ReferenceRunner
from kinetic.testing.gguf_factory import ARCHITECTURES, Dims, write_random_model
from kinetic_speed.rad1 import Rad1Drafter, TokenLog
from kinetic_speed.rad1.drafter import FIRST_LENGTH, MAX_LENGTH
from kinetic_speed.rad1.lookup import ContextSource, NgramIndex
from kinetic_speed.rad1.prediction import PredictionSource

FAMILIES = ARCHITECTURES
TOLERANCE = 0.02  # a device's logits and hidden states from the reference's, in fractions of their spread
SETTINGS = [
    {"temp": 0},
    {"temp": 0.8, "seed": 7},
    {"temp": 1.0, "top_k": 20, "top_p": 0.9, "min_p": 0.02, "repeat_penalty": 1.1, "seed": 3},
    {"temp": 0.7, "mirostat": 2, "seed": 5},
    {"temp": 0.9, "dry_multiplier": 0.8, "presence_penalty": 0.3, "seed": 11},
]
RUST_FILE = """fn count_words(text: &str) -> usize {
    let mut count = 0;
    for word in text.split_whitespace() {
        if !word.is_empty() {
            count += 1;
        }
    }
    count
}
"""


class OracleDrafter:
    """Guesses the known plain answer, with every third guess wrong: full, partial and no acceptance."""

    def __init__(self, prompt_length: int, answer: Sequence[int], n_vocab: int):
        self.prompt_length, self.answer, self.n_vocab = prompt_length, list(answer), n_vocab
        self.accepted = 0

    reads_hidden = False

    def begin(self, context, sequence):
        pass

    def propose(self, history, limit):
        at = len(history) - self.prompt_length
        guesses = self.answer[at : at + limit]
        return [(t + 1) % self.n_vocab if (at + i) % 3 == 2 else t for i, t in enumerate(guesses)]

    def feedback(self, proposed, accepted):
        self.accepted += accepted

    def kept(self):
        return 2 / 3

    def end(self, history):
        pass


def answer(session: Session, prompt: list[int], settings: dict, n: int) -> tuple[list[int], int]:
    """The answer's tokens and the tokens its sequence holds afterwards."""
    seq = session.new_sequence()
    tokens = list(session.generate(seq, prompt, session.settings(settings), n))
    return tokens, seq.n_tokens


@pytest.fixture(scope="module", params=FAMILIES)
def random_session(request, tmp_path_factory) -> Session:
    path = tmp_path_factory.mktemp("rad1") / f"{request.param}.gguf"
    write_random_model(path, request.param, Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q8_0", seed=5)
    return Session(path, SessionOptions(device="cpu", ctx_size=256), announce=lambda line: None)


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_drafted_equals_plain_random(random_session, settings):
    prompt = [1, *range(260, 270), *range(260, 265)]
    random_session.drafter = None
    plain, plain_held = answer(random_session, prompt, settings, 40)
    oracle = OracleDrafter(len(prompt), plain, random_session.tokenizer.n_vocab)
    random_session.drafter = oracle
    assert answer(random_session, prompt, settings, 40) == (plain, plain_held)
    assert oracle.accepted > 0
    random_session.drafter = Rad1Drafter(TokenLog())
    assert answer(random_session, prompt, settings, 40) == (plain, plain_held)


@pytest.fixture(scope="module", params=DEVICES)
def predicting_session(request, tmp_path_factory) -> Session:
    """Qwen3.5 with its prediction layer (random weights), on each device."""
    device_or_skip(request.param)
    path = tmp_path_factory.mktemp("mtp") / "qwen35.gguf"
    write_random_model(path, "qwen35", Dims(n_layer=3, n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q8_0", seed=5,
                       metadata={"qwen35.nextn_predict_layers": 1})
    return Session(path, SessionOptions(device=request.param, ctx_size=256), announce=lambda line: None)


def test_the_prediction_block_matches_the_reference_and_keeps_hidden_states(predicting_session):
    """Qwen3.5's prediction layer (Stack.prediction) on its rows' tokens and vectors, as the reference runs it; the
    rows that ask keep their normed hidden states."""
    runner = predicting_session.runner
    tokens = np.random.default_rng(0).integers(0, runner.stack.n_vocab, 12).tolist()
    vectors = np.random.default_rng(1).standard_normal((12, runner.stack.n_embd)).astype(np.float32)
    outputs = []
    for predictor in (runner.predictor(), ReferenceRunner(runner.stack.prediction)):
        seq = predictor.new_sequence()
        rows = [Row(seq, t, p, parent=p - 1, logits=True, hidden=True, vector=v)
                for p, (t, v) in enumerate(zip(tokens, vectors))]
        outputs.append((predictor.forward(rows), np.array([seq.hidden[p] for p in range(12)])))
    (ours, our_hidden), (reference, their_hidden) = outputs
    assert np.abs(ours - reference).mean() < TOLERANCE * reference.std()
    assert np.abs(our_hidden - their_hidden).mean() < TOLERANCE * their_hidden.std()


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()))
def test_drafts_from_the_prediction_block_equal_plain(predicting_session, settings, monkeypatch):
    session, prompt = predicting_session, [1, *range(260, 270)]
    assert isinstance(session.drafter, Rad1Drafter) and session.drafter.reads_hidden
    drafter = session.drafter.fork()  # its own policy: random weights' drafts miss, and misses pause drafting
    drafts, propose = [], drafter.prediction.propose
    monkeypatch.setattr(drafter.prediction, "propose", lambda *args: drafts.append(propose(*args)) or drafts[-1])
    monkeypatch.setattr(session, "drafter", None)
    plain = answer(session, prompt, settings, 40)
    session.drafter = drafter
    assert answer(session, prompt, settings, 40) == plain
    assert drafts and all(drafts)


def test_the_prediction_block_pairs_each_token_with_the_hidden_state_before_it(predicting_session):
    """As llama.cpp's draft-mtp: the token at p with the main model's hidden state at p - 1 (zeros before 0),
    then each draft token with the block's own hidden state."""
    runner = predicting_session.runner
    predictor, history = runner.predictor(), [1, *range(260, 272)]
    seq = runner.new_sequence()
    runner.forward([Row(seq, t, p, parent=p - 1, hidden=True) for p, t in enumerate(history[:-1])])
    source = PredictionSource(predictor)
    source.begin(history, seq)
    draft = source.propose(history, 3)
    mtp, last = predictor.new_sequence(), len(history) - 1
    vectors = [np.zeros(runner.stack.n_embd, np.float32)] + [seq.hidden[p] for p in range(last)]
    logits = predictor.forward([Row(mtp, t, p, parent=p - 1, logits=p == last, hidden=True, vector=vectors[p])
                                for p, t in enumerate(history)])
    expected = [int(np.argmax(logits[0]))]
    for position in range(last + 1, last + 3):
        row = Row(mtp, expected[-1], position, logits=True, hidden=True, vector=mtp.hidden[position - 1])
        expected.append(int(np.argmax(predictor.forward([row])[0])))
    assert draft == expected


@pytest.fixture(scope="module", params=[("qwen", "f16"), ("gemma", "f16"), ("qwen", "q8_0"), ("gemma", "q8_0")],
                ids="-".join)
def real_sessions(request) -> tuple[Session, Session]:
    key, cache = request.param  # the KV cache type, of keys and values
    path = request.getfixturevalue(f"{key}_gguf")
    make = lambda off: Session(path, SessionOptions(device="cpu", ctx_size=1024, off=off,  # noqa: E731
                                                    cache_types=(cache, cache)), announce=lambda line: None)
    return make(()), make(("rad1",))


@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.5, "top_k": 40, "seed": 42}], ids=["greedy", "seeded"])
def test_drafted_equals_plain_real(real_sessions, settings, monkeypatch):
    drafted, plain = real_sessions
    assert isinstance(drafted.drafter, Rad1Drafter) and plain.drafter is None
    text = f"// words.rs\n{RUST_FILE}\n// words.rs, with `count` renamed to `total`\n"
    prompt = drafted.tokenizer.encode(text, add_special=True)
    kept, record = [], drafted.drafter.feedback

    def feedback(proposed: int, accepted: int) -> None:
        kept.append(accepted)
        record(proposed, accepted)

    monkeypatch.setattr(drafted.drafter, "feedback", feedback)
    ours = answer(drafted, prompt, settings, 48)
    assert ours == answer(plain, prompt, settings, 48)
    assert sum(kept) >= 12, "the answer repeats much of the prompt: drafts must land"


def test_context_source_drafts_what_followed_the_last_occurrence():
    source = ContextSource()
    source.begin([5, 6, 7, 8, 9, 5, 6, 7, 1, 2])
    assert source.propose([5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6, 7], 3) == [1, 2, 5]  # the latest: 5 6 7 -> 1 2
    assert source.propose([5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6, 7, 3], 3) == []  # 7 3 never occurred


def test_context_source_follows_its_place_through_an_edit():
    source = ContextSource()
    original = [10, 11, 12, 13, 14, 15, 16, 17]
    source.begin([*original, 99])
    history = [*original, 99, 10, 11]
    assert source.propose(history, 3) == [12, 13, 14]
    history.append(50)  # the answer replaces 12 by 50 51
    assert source.propose(history, 3) == []  # in the edit: no draft (nor from a 2-gram elsewhere)
    history.append(51)
    assert source.propose(history, 3) == []
    history.append(13)  # back on the original a little further on
    assert source.propose(history, 3) == []  # not yet confirmed
    history.append(14)
    assert source.propose(history, 3) == [15, 16, 17]


def test_ngram_index_prefers_the_longest_suffix():
    index = NgramIndex([1, 2, 3, 10, 9, 2, 3, 20])
    assert index.continuation([1, 2, 3], 1) == [10]  # 1 2 3 beats the later 2 3
    assert index.continuation([7, 2, 3], 2) == [20]


def test_token_log_drafts_across_requests_and_stays_bounded():
    log = TokenLog(max_tokens=40)
    log.record([1, 2, 3, 4, 5, 6])
    assert log.propose([9, 2, 3], 3) == [4, 5, 6]
    for start in range(100, 200, 10):
        log.record(list(range(start, start + 9)))
    assert log.propose([1, 2, 3], 3) == []  # forgotten with the older half
    assert log.propose([191, 192], 2) == [193, 194]


@pytest.mark.parametrize("feedback, rate", [
    ([(3, 3)] * 30, 1.0),  # every guess right
    ([(3, 0)] * 30, 0.0),  # every first guess wrong
    ([(4, 1)] * 30, 0.5),  # one right, then one wrong: the two after it were never checked
    ([(2, 2), (4, 1)] * 30, 0.75),
], ids=["all", "none", "half", "mixed"])
def test_drafter_kept_counts_the_guesses_checked(feedback, rate):
    drafter = Rad1Drafter(TokenLog())
    assert drafter.kept() == 0.5  # before any draft
    drafter.begin([1, 2, 3, 4] * 30, None)
    assert drafter.propose([1, 2, 3, 4] * 30, 3)
    for proposed, accepted in feedback:
        drafter.feedback(proposed, accepted)
    assert drafter.kept() == pytest.approx(rate, abs=0.05)  # recent drafts weigh more


def test_drafter_lengthens_on_success_and_pauses_longer_after_misses():
    drafter = Rad1Drafter(TokenLog())
    history = [1, 2, 3, 4] * 30
    drafter.begin(history, None)
    lengths = []
    for _ in range(4):
        lengths.append(len(drafter.propose(history, 100)))
        drafter.feedback(lengths[-1], lengths[-1])
    assert lengths == [FIRST_LENGTH, 15, 31, 31] and MAX_LENGTH == 31  # passes of 4, 16 and 32 rows
    pauses = []
    for _ in range(3):
        drafter.feedback(4, 0)
        skipped = 0
        while not drafter.propose(history, 100):
            skipped += 1
        pauses.append(skipped)
    assert pauses == [1, 2, 4]
    drafter.feedback(2, 1)  # a partial success ends the run of misses
    assert len(drafter.propose(history, 100)) == 2
    drafter.feedback(2, 2)
    assert len(drafter.propose(history, 100)) == 15  # from a short draft, up to the first whole tile


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, timeout=600)


def test_off_takes_the_documented_names_only(qwen_gguf):
    bad = kinetic("run", str(qwen_gguf), "Hi", "--off", "rad1,turbo")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "unknown speed technology 'turbo'" in bad.stderr and "rad1, warm-start" in bad.stderr


@pytest.mark.parametrize("off", [[], ["--off", "rad1"]], ids=["rad1", "off"])
def test_bench_edit256_is_drafted_and_checked(tmp_path, off):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q8_0")
    result = kinetic("bench", str(path), "-r", "1", "--device", "cpu", "--json", *off)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["edit_tokens"] == 256 and report["edit_tokens_per_second"] > 0
    assert report["edit_drafted"] == (not off) and report["edit_identical"] is True
    assert report["technologies"] == ("on: Shortlist, Torque" if off else "on: RAD-1, Shortlist, Torque")


def test_bench_says_which_technologies_ran(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128), "Q8_0")
    lines = kinetic("bench", str(path), "-r", "1", "--device", "cpu").stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("on the CPU, best of 1"))
    assert lines[at + 1] == ("speed technologies on: RAD-1, Shortlist, Torque; Warm Start, Zero Wait and Convoy take "
                             "no part")
    assert lines[at + 2] == "edit: drafted output identical to plain decoding: yes"
    assert lines[at + 3].startswith("peak memory ")
