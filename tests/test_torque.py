"""Torque: the CPU's fused pass gives, bit for bit, the logits and caches of the kernel-at-a-time pass."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from greedy_golden import load_golden

from kinetic.contracts.device import Row, UploadOptions
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.testing.gguf_factory import ARCHITECTURES, Dims, write_random_model
from kinetic_cpu.torque_tables import FusedRun

# the families whose blocks are all attention, gated feed-forward and short convolution blocks Torque runs; in
# PARTLY's, gated attention and experts run unfused between fused runs, and recurrent blocks too in passes of
# several rows of a sequence
FUSED = {"llama", "qwen2", "qwen3", "gemma3", "granite", "olmo2", "exaone4", "ernie4_5", "hunyuan-dense", "lfm2"}
PARTLY = {"granitehybrid", "falcon-h1", "qwen35", "qwen3moe", "qwen35moe", "granitemoe", "lfm2moe", "gpt-oss"}
RECURRENT = {"granitehybrid", "falcon-h1", "qwen35", "qwen35moe"}  # Mamba-2 or Gated DeltaNet blocks
ONE_ROW = {"granitehybrid", "falcon-h1"}  # PARTLY's whose passes of one row a sequence are fused whole (Mamba-2 too)
ROWS = 40


def uploaded(path: Path, torque: bool, caches: tuple[str, str] = ("f16", "f16")):
    runner = plugins().devices["cpu"].upload(load_stack(path), UploadOptions(context_length=256, cache_types=caches,
                                                                             threads=2))
    assert not torque or runner.start_torque()
    runner.settle()
    return runner


@pytest.fixture(scope="module", params=ARCHITECTURES)
def family(request, tmp_path_factory) -> tuple[str, Path]:
    path = tmp_path_factory.mktemp("torque") / f"{request.param}.gguf"
    # four layers: two of each kind of kept state in the hybrids (tables of addresses by layer and sequence)
    write_random_model(path, request.param, Dims(n_layer=4, n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                       weight_type="Q8_0", seed=7)
    return request.param, path


def passes(runner, tokens: list[int], size: int) -> tuple[np.ndarray, bytes]:
    """Every row's logits, the tokens run in passes of `size` rows of one sequence, and its saved state."""
    seq, out = runner.new_sequence(), []
    for start in range(0, len(tokens), size):
        chunk = tokens[start : start + size]
        out.append(runner.forward([Row(seq, t, start + i, parent=i - 1, logits=True) for i, t in enumerate(chunk)]))
    return np.concatenate(out), seq.save()


def test_torque_fuses_the_blocks_it_takes_and_runs_the_others_between(family):
    name, path = family
    runner = uploaded(path, False)
    assert runner.start_torque() == (name in FUSED | PARTLY)
    runner.settle()
    if runner._torque is not None:
        unfused = [part for part in runner._torque.parts if not isinstance(part, FusedRun)]
        assert bool(unfused) == (name in PARTLY)
        unfused = [part for part in runner._torque.one_row_parts if not isinstance(part, FusedRun)]
        assert bool(unfused) == (name in PARTLY - ONE_ROW)


@pytest.mark.parametrize("size", [1, 7, 32, 33])
def test_fused_passes_give_the_unfused_bits(family, size):
    """One row at a time, drafted rows, and beyond the rows Torque takes (33: unfused, the same bits)."""
    name, path = family
    if name not in FUSED | PARTLY:
        pytest.skip(f"Torque does not run {name}'s blocks")
    tokens = np.random.default_rng(3).integers(0, load_stack(path).n_vocab, ROWS).tolist()
    fused, plain = passes(uploaded(path, True), tokens, size), passes(uploaded(path, False), tokens, size)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1]


def test_a_fused_pass_of_several_sequences_gives_each_its_unfused_bits(family):
    """Convoy's passes: a decode row, a prompt chunk and drafted rows of three sequences side by side."""
    name, path = family
    if name not in FUSED | PARTLY:
        pytest.skip(f"Torque does not run {name}'s blocks")
    tokens = np.random.default_rng(5).integers(0, load_stack(path).n_vocab, (3, 30)).tolist()
    held, counts = (12, 3, 20), (1, 9, 4)
    results = []
    for runner in (uploaded(path, True), uploaded(path, False)):
        seqs = [runner.new_sequence() for _ in held]
        for seq, h, row in zip(seqs, held, tokens):
            runner.forward([Row(seq, t, p, parent=p - 1) for p, t in enumerate(row[:h])])
        rows = []
        for seq, h, count, row in zip(seqs, held, counts, tokens):
            first = len(rows)
            rows += [Row(seq, row[h + j], h + j, parent=first + j - 1 if j else -1, logits=True) for j in range(count)]
        results.append((runner.forward(rows), [seq.save() for seq in seqs]))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]


def test_one_row_passes_of_several_sequences_give_each_its_unfused_bits(family):
    """Convoy's decode steps: a row of each of three sequences a pass, their recurrent states moved on in place
    by the fused Mamba-2 blocks; then a longer pass after them, from the states they left."""
    name, path = family
    if name not in FUSED | PARTLY:
        pytest.skip(f"Torque does not run {name}'s blocks")
    tokens = np.random.default_rng(9).integers(0, load_stack(path).n_vocab, (3, 24)).tolist()
    results = []
    for runner in (uploaded(path, True), uploaded(path, False)):
        seqs, logits = [runner.new_sequence() for _ in tokens], []
        for p in range(20):
            logits.append(runner.forward([Row(seq, row[p], p, logits=True) for seq, row in zip(seqs, tokens)]))
        logits.append(runner.forward([Row(seqs[0], t, 20 + j, parent=j - 1, logits=True)
                                      for j, t in enumerate(tokens[0][20:])]))
        results.append((np.concatenate(logits), [seq.save() for seq in seqs]))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]


def test_fused_recurrent_blocks_keep_the_states_a_cut_and_a_save_read(family):
    """One-row passes past a snapshot interval (kinetic.recurrent.SNAPSHOT) after a cut into a drafted pass, then
    a cut back among them: every logit, the saved sequence (its kept snapshots too) and the replayed step alike."""
    name, path = family
    if name not in RECURRENT:
        pytest.skip(f"{name} has no recurrent blocks")
    tokens = np.random.default_rng(6).integers(0, load_stack(path).n_vocab, 256).tolist()
    results = []
    for runner in (uploaded(path, True), uploaded(path, False)):
        seq = runner.new_sequence()
        logits = [runner.forward([Row(seq, t, p, parent=p - 1, logits=True) for p, t in enumerate(tokens[:7])])]
        seq.truncate(5)
        logits += [runner.forward([Row(seq, tokens[p], p, logits=True)]) for p in range(5, 256)]
        saved = seq.save()
        seq.truncate(250)
        logits.append(runner.forward([Row(seq, tokens[250], 250, logits=True)]))
        results.append((np.concatenate(logits), saved))
    assert np.array_equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]


def test_fused_mamba2_blocks_of_several_groups_give_the_unfused_bits(tmp_path):
    """Mamba-2 with two groups of B and C, each head reading its group's, and an out_norm per group."""
    path = write_random_model(tmp_path / "m.gguf", "granitehybrid", Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                              weight_type="Q8_0", seed=11, metadata={"granitehybrid.ssm.group_count": 2})
    tokens = np.random.default_rng(4).integers(0, load_stack(path).n_vocab, ROWS).tolist()
    fused, plain = passes(uploaded(path, True), tokens, 1), passes(uploaded(path, False), tokens, 1)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1]


def test_a_quantized_cache_keeps_the_unfused_pass(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                              weight_type="Q8_0", seed=7)
    assert not uploaded(path, False, ("q8_0", "q8_0")).start_torque()


@pytest.mark.parametrize("key", ["qwen", "gemma"])
def test_real_models_fused_decoding_gives_the_unfused_logits(key, request):
    """A golden prompt, then llama.cpp's answer a token at a time: every step's logits identical."""
    path = request.getfixturevalue(f"{key}_gguf")
    prompt = load_golden(key, path, 32)["prompts"][0]
    tokens = prompt["prompt_ids"] + prompt["as_shipped"]["tokens"][:32]
    fused, plain = passes(uploaded(path, True), tokens, 1), passes(uploaded(path, False), tokens, 1)
    assert np.array_equal(fused[0], plain[0]) and fused[1] == plain[1]


def test_off_torque_keeps_the_unfused_pass(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(), "Q8_0")
    on = Session(path, SessionOptions(device="cpu", ctx_size=64), announce=lambda line: None)
    off = Session(path, SessionOptions(device="cpu", ctx_size=64, off=("torque",)), announce=lambda line: None)
    on.settle()
    assert "torque" in [t.name for t in on.speed_on] and on.runner._torque is not None
    assert "torque" not in [t.name for t in off.speed_on] and off.runner._torque is None
