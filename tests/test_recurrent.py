"""Recurrent states (kinetic.recurrent) truncate exactly on every device: a sequence cut at a kept snapshot, between
snapshots, inside a draft pass or after a save and load, then continued, gives the bits of a run never cut."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from usable_devices import DEVICES, device_or_skip

from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic import recurrent
from kinetic.recurrent import MAX_SNAPSHOT, SNAPSHOT, snapshot_interval
from kinetic.testing.gguf_factory import Dims, write_random_model

RECURRENT_FAMILIES = ("granitehybrid", "falcon-h1", "qwen35")
N = 600  # tokens held before the cut: two snapshots and a pass of 88 past the prompt grid's 512
DRAFT = 8  # rows of the pass after them
CUTS = (10, SNAPSHOT, 300, 2 * SNAPSHOT, 2 * SNAPSHOT + 1, N - 1)


@lru_cache(maxsize=None)
def _runner(device_name: str, path: Path):
    return device_or_skip(device_name).upload(load_stack(path), UploadOptions(context_length=1024))


@pytest.fixture(scope="module", params=[(d, f) for d in DEVICES for f in RECURRENT_FAMILIES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def setting(request, tmp_path_factory):
    """(runner, tokens, every row's logits of a run never cut) for a random model of the family."""
    device_name, arch = request.param
    path = write_random_model(tmp_path_factory.mktemp(arch) / "m.gguf", arch,
                              Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256), weight_type="Q8_0", seed=3)
    runner = _runner(device_name, path)
    tokens = np.random.default_rng(5).integers(0, load_stack(path).n_vocab, N + DRAFT).tolist()
    seq = runner.new_sequence()
    whole = np.concatenate([feed(runner, seq, tokens[:512]), feed(runner, seq, tokens[512:])])
    return runner, tokens, whole


def feed(runner, seq, tokens: list[int]) -> np.ndarray:
    """tokens appended to seq in one pass; every row's logits."""
    first = seq.n_tokens
    return runner.forward([Row(seq, t, first + i, parent=i - 1, logits=True) for i, t in enumerate(tokens)])


def held(runner, tokens: list[int]):
    """A sequence holding the first N tokens, fed as a prompt is: on the grid of 512."""
    seq = runner.new_sequence()
    feed(runner, seq, tokens[:512])
    feed(runner, seq, tokens[512:N])
    return seq


@pytest.mark.parametrize("cut", CUTS)
def test_a_cut_resumes_as_the_run_never_cut(setting, cut):
    runner, tokens, whole = setting
    seq = held(runner, tokens)
    seq.truncate(cut)
    assert seq.n_tokens == cut
    assert np.array_equal(feed(runner, seq, tokens[cut:]), whole[cut:])


def test_a_cut_inside_a_draft_pass_resumes_exactly(setting):
    runner, tokens, whole = setting
    seq = held(runner, tokens)
    feed(runner, seq, tokens[N:])
    seq.truncate(N + 3)  # three of the draft's rows kept, as RAD-1 keeps the right guesses
    assert np.array_equal(feed(runner, seq, tokens[N + 3 :]), whole[N + 3 :])


def test_a_loaded_sequence_cuts_back_past_its_snapshots(setting):
    runner, tokens, whole = setting
    loaded = runner.load(held(runner, tokens).save())
    loaded.truncate(300)
    assert np.array_equal(feed(runner, loaded, tokens[300:]), whole[300:])


def test_one_row_passes_across_a_snapshot_and_a_cut_give_the_same_bits(setting):
    """One-token passes (on CUDA, replayed graphs: one per buffer a state alternates between) across a kept
    snapshot, then after a cut back before it."""
    runner, tokens, whole = setting
    seq = runner.new_sequence()
    feed(runner, seq, tokens[: SNAPSHOT - 6])
    one_by_one = [feed(runner, seq, [t]) for t in tokens[SNAPSHOT - 6 : SNAPSHOT + 6]]
    assert np.array_equal(np.concatenate(one_by_one), whole[SNAPSHOT - 6 : SNAPSHOT + 6])
    seq.truncate(SNAPSHOT - 3)
    again = [feed(runner, seq, [t]) for t in tokens[SNAPSHOT - 3 : SNAPSHOT + 3]]
    assert np.array_equal(np.concatenate(again), whole[SNAPSHOT - 3 : SNAPSHOT + 3])


def test_snapshots_grow_apart_while_one_outweighs_the_tokens_between():
    assert snapshot_interval(10 << 20, 100 << 10) == SNAPSHOT  # 10 MB of states, 100 KB a token
    assert snapshot_interval(18 << 20, 12 << 10) == 2048  # Qwen3.5-0.8B's states against its KV cache alone
    assert snapshot_interval(1 << 40, 1) == MAX_SNAPSHOT


def test_a_longer_interval_cuts_and_saves_exactly(setting, monkeypatch):
    runner, tokens, whole = setting
    monkeypatch.setattr(recurrent, "snapshot_interval", lambda state_bytes, token_bytes: 2 * SNAPSHOT)
    seq = held(runner, tokens)
    assert seq.recurrent.interval == 2 * SNAPSHOT and set(seq.recurrent.kept) == {2 * SNAPSHOT}
    loaded = runner.load(seq.save())
    loaded.truncate(300)  # before the only snapshot: from the start again
    assert np.array_equal(feed(runner, loaded, tokens[300:]), whole[300:])
