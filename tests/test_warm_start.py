"""Warm Start: a prompt resumed from an earlier request's state answers exactly as a cold start does,
greedy and seeded, across a restart (a new session on the same folder) and with corrupt, truncated and
foreign state files present, with either KV cache type; the CPU's saved state round-trips bit for bit and
never loads into a cache of other types; the stores stay bounded."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kinetic.contracts.device import Row
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic_speed.warm_start import WarmStart
from kinetic_speed.warm_start.disk import SUFFIX, DiskStates

PROMPT = [1, *range(260, 290), *range(270, 280)]
SETTINGS = [{"temp": 0}, {"temp": 0.9, "top_k": 30, "seed": 4}]
CACHES = [("f16", "f16"), ("q8_0", "q8_0"), ("q8_0", "f16")]  # (-ctk, -ctv)


@pytest.fixture(scope="module", params=["llama", "gemma3", "lfm2", "granitehybrid", "falcon-h1", "qwen35"])
def model(request, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("warm") / f"{request.param}.gguf"
    return write_random_model(path, request.param, Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=128), "Q8_0", seed=3)


def session(model: Path, folder: Path, warm: bool = True, caches: tuple[str, str] = ("f16", "f16")) -> Session:
    off = () if warm else ("warm-start",)
    options = SessionOptions(device="cpu", ctx_size=256, off=off, state_dir=folder, cache_types=caches)
    return Session(model, options, announce=lambda line: None)


def answer(s: Session, prompt: list[int], settings: dict) -> tuple[list[int], int]:
    """The answer's tokens and how many prompt tokens came from a kept state."""
    generation = s.generate(s.new_sequence(), prompt, s.settings(settings), 12)
    return list(generation), len(generation.context)


@pytest.mark.parametrize("caches", CACHES, ids="-".join)
@pytest.mark.parametrize("settings", SETTINGS, ids=["greedy", "seeded"])
def test_warm_answers_equal_cold_ones_across_a_restart(model, tmp_path, settings, caches):
    cold, _ = answer(session(model, tmp_path, warm=False, caches=caches), PROMPT + [298], settings)
    first = session(model, tmp_path, caches=caches)
    assert answer(first, PROMPT + [297], settings)[1] == 0
    assert answer(first, PROMPT + [298], settings) == (cold, len(PROMPT))  # from memory
    first.prompt_states.flush()
    restarted = session(model, tmp_path, caches=caches)
    assert answer(restarted, PROMPT + [298], settings) == (cold, len(PROMPT))  # from disk


def test_a_state_of_other_cache_types_is_not_used(model, tmp_path):
    first = session(model, tmp_path)
    answer(first, PROMPT + [297], {"temp": 0})
    first.prompt_states.flush()
    for caches in CACHES[1:]:
        assert answer(session(model, tmp_path, caches=caches), PROMPT + [298], {"temp": 0})[1] == 0


def test_bad_state_files_are_ignored(model, tmp_path):
    cold, _ = answer(session(model, tmp_path / "cold", warm=False), PROMPT + [298], {"temp": 0})
    first = session(model, tmp_path)
    answer(first, PROMPT + [297], {"temp": 0})
    first.prompt_states.flush()
    [good] = tmp_path.glob("*" + SUFFIX)
    data = good.read_bytes()
    (tmp_path / ("truncated" + SUFFIX)).write_bytes(data[: len(data) // 2])
    (tmp_path / ("garbage" + SUFFIX)).write_bytes(b"KWS1\n" + b"\xff" * 64)
    flipped = bytearray(data)
    flipped[-10] ^= 0xFF
    good.write_bytes(bytes(flipped))  # a payload that no longer matches its digest
    restarted = session(model, tmp_path)
    assert answer(restarted, PROMPT + [298], {"temp": 0}) == (cold, 0)
    assert not good.exists()  # removed when its check failed


def test_a_state_of_another_model_is_not_used(model, tmp_path):
    first = session(model, tmp_path)
    answer(first, PROMPT + [297], {"temp": 0})
    first.prompt_states.flush()
    other = write_random_model(tmp_path / "other.gguf", "llama", Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=128),
                               "Q8_0", seed=99)
    assert answer(session(other, tmp_path), PROMPT + [298], {"temp": 0})[1] == 0


@pytest.mark.parametrize("caches", CACHES, ids="-".join)
def test_cpu_state_round_trips_bit_for_bit(model, tmp_path, caches):
    runner = session(model, tmp_path, warm=False, caches=caches).runner
    seq = runner.new_sequence()
    runner.forward([Row(seq, t, p, parent=p - 1) for p, t in enumerate(PROMPT)])
    blob = seq.save()
    again = runner.load(blob)
    assert again.n_tokens == len(PROMPT)
    rows = lambda s: [Row(s, 298, len(PROMPT), logits=True)]  # noqa: E731
    assert np.array_equal(runner.forward(rows(seq)), runner.forward(rows(again)))
    with pytest.raises(KineticError):
        runner.load(blob[:-2])
    with pytest.raises(KineticError):
        runner.load(b"not a state")
    for others in CACHES:  # a state of other cache types, even of the same size, is not this cache's
        if others != caches:
            other_runner = session(model, tmp_path, warm=False, caches=others).runner
            with pytest.raises(KineticError):
                runner.load(other_runner.new_sequence().save())


def test_stores_stay_bounded(tmp_path):
    class State:
        def __init__(self, n):
            self.n = n

        def save(self):
            return bytes(self.n)

    class Timings:
        prompt_tokens, prompt_seconds = 0, 0.0

    states = WarmStart(tmp_path, {"model": "m", "build": "b"}, memory_bytes=2500, disk_bytes=2500)
    for i in range(4):
        states.store(State(1000), [i, i + 1], Timings())
    states.flush()
    assert list(states.memory) == [(2, 3), (3, 4)]  # the least recently used went first
    assert sorted(DiskStates(tmp_path, {"model": "m", "build": "b"}, 0).keys().values()) == [(2, 3), (3, 4)]


@pytest.mark.parametrize("flags, kept", [([], True), (["--no-prompt-cache"], False), (["--off", "warm-start"], False)])
def test_run_keeps_states_under_cache_dir_unless_told_not_to(model, tmp_path, flags, kept):
    import subprocess
    import sys

    folder, template = tmp_path / "states", tmp_path / "plain.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    result = subprocess.run([sys.executable, "-m", "kinetic", "run", str(model), "tok1 tok2 tok3", "-n", "4",
                             "--temp", "0", "--device", "cpu", "--cache-dir", str(folder),
                             "--chat-template-file", str(template), *flags],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert bool(list(folder.glob("*" + SUFFIX))) == kept


def test_states_are_tied_to_the_builds_kernels_too(tmp_path, monkeypatch):
    """A saved state is valid only for the build that computed it: a change to a kernel source (a .cu, .cuh or
    .wgsl file, not only Python) makes another build id, and so another Warm Start identity."""
    from kinetic import receipt
    from kinetic_speed.warm_start import identity

    package = tmp_path / "kinetic_kernels_under_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(receipt, "PACKAGES", ("kinetic_kernels_under_test",))
    runner = type("Runner", (), {"device_name": "the CPU", "cache_types": ("f16", "f16")})()
    monkeypatch.setattr(identity, "build_id", receipt.build_id.__wrapped__)  # computed afresh, not once a process
    identities = []
    for kernel in ("fn main() {}", "fn main() { let x = 1; }"):
        (package / "matmul.wgsl").write_text(kernel)
        identities.append(identity.build_identity(runner))
    assert identities[0] != identities[1]
