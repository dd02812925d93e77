"""`kinetic perplexity` as a user runs it: on both real models its scores of tests/data/perplexity.txt are
llama-perplexity's (tests/golden/perplexity.json, scripts/make_perplexity_golden.py) as closely as llama.cpp's
own two CPU kernel sets agree with each other; its KL-divergence base file has llama-perplexity's layout and a
model compared with its own base file diverges by nothing; bad input is one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kinetic.engine.perplexity import MAGIC, base_log_probs, quantized_log_probs
from kinetic.testing import real_models
from kinetic.testing.gguf_factory import Dims, write_random_model

TEXT = Path(__file__).parent / "data" / "perplexity.txt"
GOLDEN = json.loads((Path(__file__).parent / "golden" / "perplexity.json").read_text())


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", "perplexity", *args], capture_output=True, text=True)


@pytest.mark.parametrize("key", GOLDEN["models"])
def test_scores_are_llama_perplexitys(key):
    golden = GOLDEN["models"][key]
    done = kinetic(str(real_models.fetch(key)), str(TEXT), "-c", str(GOLDEN["n_ctx"]), "--chunks",
                   str(GOLDEN["chunks"]))
    assert done.returncode == 0, done.stderr
    running = [float(v) for v in re.findall(r"\[\d+\]([\d.]+),", done.stdout)]
    ppl = float(re.search(r"^Final estimate: PPL = ([\d.]+) \+/- [\d.]+$", done.stdout, re.M)[1])
    assert len(running) == GOLDEN["chunks"] and running[-1] == ppl
    theirs = (golden["repacked"]["ppl"], golden["no_repack"]["ppl"])
    spread = abs(theirs[0] - theirs[1])  # how far llama.cpp's own two kernel sets part
    assert min(abs(ppl - t) for t in theirs) <= 2 * spread, (ppl, theirs)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, Path]:
    """A random model and a text of 3 chunks of 64 of its tokens."""
    folder = tmp_path_factory.mktemp("ppl")
    model = write_random_model(folder / "small.gguf", "llama", Dims(), "F32")
    text = folder / "text.txt"
    text.write_text(" ".join(f"tok{(i * 7) % 250}" for i in range(200)))
    return model, text


def test_a_base_file_has_llama_perplexitys_layout_and_matches_itself(small, tmp_path):
    model, text = small
    base = tmp_path / "base.kld"
    scored = kinetic(str(model), str(text), "-c", "64", "--chunks", "3", "--kl-divergence-base", str(base))
    assert scored.returncode == 0, scored.stderr
    data = base.read_bytes()
    n_ctx, n_vocab, n_chunk = np.frombuffer(data[8:20], np.int32)
    nv = 2 * ((n_vocab + 1) // 2) + 4
    assert data[:8] == MAGIC and (n_ctx, n_vocab, n_chunk) == (64, Dims().n_vocab, 3)
    assert len(data) == 20 + 4 * n_ctx * n_chunk + 2 * n_chunk * (n_ctx - 1 - n_ctx // 2) * nv
    compared = kinetic(str(model), "--kl-divergence", str(base))
    assert compared.returncode == 0, compared.stderr
    kld = float(re.search(r"Mean    KLD:\s+(-?[\d.]+)", compared.stdout)[1])
    same = float(re.search(r"Same top p:\s+([\d.]+)", compared.stdout)[1])
    ours, theirs = (float(v) for v in re.findall(r"Mean PPL\((?:Q|base)\)\s+:\s+([\d.]+)", compared.stdout))
    final = float(re.search(r"Final estimate: PPL = ([\d.]+)", scored.stdout)[1])
    assert abs(kld) < 1e-5 and same == 100.0 and ours == pytest.approx(final, rel=1e-5)
    assert theirs == pytest.approx(ours, rel=1e-3)  # the base's log-probabilities, in 65536 steps


def test_log_probabilities_survive_their_uint16_steps():
    logits = np.random.default_rng(1).standard_normal((5, 301)).astype(np.float32) * 4
    rows = quantized_log_probs(logits, 301)
    exact = logits - logits.max(axis=1, keepdims=True)
    exact -= np.log(np.exp(exact).sum(axis=1, keepdims=True))
    kept = exact > exact.max(axis=1, keepdims=True) - 16
    step = (logits.max(axis=1) - logits.min(axis=1)) / 65535
    assert np.all(np.abs(base_log_probs(rows, 301) - exact)[kept] <= np.repeat(step[:, None], 301, 1)[kept])


@pytest.mark.parametrize("args, words", [
    (["{model}", "{short}"], "perplexity with -c 512 needs at least 1024"),
    (["{model}", "missing.txt"], "the text missing.txt is not a file"),
    (["{model}", "--kl-divergence", "{short}"], "not a KL-divergence base file"),
    (["{model}"], "give the text to score"),
])
def test_bad_input_is_one_line(small, tmp_path, args, words):
    model, _ = small
    short = tmp_path / "short.txt"
    short.write_text("tok1 tok2 tok3")
    done = kinetic(*(a.format(model=model, short=short) for a in args))
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
