"""The Vulkan device: a batch gives each token's logits bit for bit as one-at-a-time decoding does, and it agrees
with the numpy reference executor, for every family it runs; every weight type's product is exact across batches and
close to the float product; RAD-1 and Warm Start change no token. The GPU tests run on any Vulkan adapter, Mesa's
lavapipe in CI (`make test` installs it where it can), and skip with the probe's reason where there is none."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from kinetic.contracts.device import UploadOptions
from kinetic.engine.devices import open_runner
from kinetic.engine.options import SessionOptions
from kinetic.errors import KineticError
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic.testing.random_weights import random_blocks

from device_checks import (assert_a_saved_sequence_resumes, assert_batches_equal_one_at_a_time,
                           assert_greedy_tokens_near_the_references, assert_rad1_and_warm_start_change_no_token,
                           assert_sequences_share_a_pass_and_truncate, in_batches, mixed_model, reference_logits,
                           tokens_for)

kinetic_vulkan = pytest.importorskip("kinetic_vulkan.device", reason="the kinetic-vulkan plugin is not installed")
import kinetic_vulkan.adapter as vulkan_adapter  # noqa: E402
from kinetic_vulkan.weights import FLOATS, NATIVE  # noqa: E402

REASON = kinetic_vulkan.probe()
gpu = pytest.mark.skipif(REASON is not None, reason=f"Vulkan is not usable here: {REASON}")

FAMILIES = ("llama", "qwen2", "qwen3", "gemma3", "granite", "olmo2", "exaone4", "ernie4_5", "hunyuan-dense")
# int8 activations against the float reference (as CUDA's and the CPU's): the mean difference, a fraction of the
# logits' spread, under TOLERANCE and the largest under 10 times it
TOLERANCE = {"Q8_0": 0.02, "Q4_K_M": 0.04}
WEIGHTS = {
    "Q8_0": lambda path, arch: write_random_model(path, arch, Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                                                  weight_type="Q8_0", seed=7),
    "Q4_K_M": lambda path, arch: mixed_model(path, arch, Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512)),
}
PROMPT = "hello hello"
MODELS = [(f, "Q8_0") for f in FAMILIES] + [(f, "Q4_K_M") for f in ("llama", "gemma3")]


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: f"{p[0]}-{p[1]}")
def random_model(request, tmp_path_factory) -> Path:
    family, weights = request.param
    return WEIGHTS[weights](tmp_path_factory.mktemp("vulkan") / f"{family}-{weights}.gguf", family)


@lru_cache(maxsize=None)
def runner_for(path: Path):
    return kinetic_vulkan.upload(load_stack(path), UploadOptions(context_length=1024))


def test_probe_is_one_line_or_usable():
    reason = kinetic_vulkan.probe()
    assert reason is None or (reason == reason.strip() != "" and "\n" not in reason)


def test_probe_without_wgpu_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)
    assert kinetic_vulkan.probe() == "wgpu is not installed (import of wgpu halted; None in sys.modules); " \
                                     "pip install 'kinetic-engine[vulkan]'"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="device nodes are Linux's")
def test_without_a_gpu_node_auto_asks_no_vulkan_driver(monkeypatch):
    """Asking the loader for adapters loads every installed driver (Mesa's with LLVM): a machine without a GPU's
    device node skips that."""
    monkeypatch.setattr(vulkan_adapter, "GPU_NODES", ())
    monkeypatch.setattr(vulkan_adapter, "_vulkan_adapters", lambda: pytest.fail("a Vulkan driver was asked"))
    assert not vulkan_adapter.gpu_present()


@gpu
def test_auto_never_takes_a_software_adapter(tmp_path):
    """--device auto runs on the CPU beside lavapipe and says nothing of it; --device vulkan takes it."""
    if vulkan_adapter.software_adapter() is None:
        pytest.skip("the Vulkan adapter here is a GPU")
    stack = load_stack(write_random_model(tmp_path / "m.gguf", "qwen2", Dims(), "Q8_0"))
    said = []
    assert open_runner(stack, "auto", UploadOptions(context_length=64), said.append)[0].name == "cpu"
    assert said == []
    assert open_runner(stack, "vulkan0", UploadOptions(context_length=64), said.append)[0].name == "vulkan"


@pytest.mark.parametrize("family, reason", [
    ("lfm2", "Vulkan has no kernel for ShortConv blocks yet"),
    ("qwen3moe", "Vulkan has no kernel for Experts blocks yet"),
    ("bert", "Vulkan has no kernels for encoders (bidirectional attention, LayerNorm) yet")])
def test_upload_refuses_what_it_has_no_kernel_for_in_one_line(tmp_path, family, reason):
    stack = load_stack(write_random_model(tmp_path / "m.gguf", family, Dims(), "Q8_0"))
    with pytest.raises(KineticError, match=rf"^Vulkan cannot run this model: {reason}$".replace("(", r"\(")
                       .replace(")", r"\)")):
        kinetic_vulkan.upload(stack, UploadOptions(context_length=64))


@gpu
def test_batches_equal_one_at_a_time(random_model):
    assert_batches_equal_one_at_a_time(runner_for(random_model), random_model)


@gpu
def test_sequences_sharing_a_pass_and_truncation(random_model):
    assert_sequences_share_a_pass_and_truncate(runner_for(random_model), random_model)


@gpu
def test_stacked_matrices_give_the_bits_of_separate_ones(tmp_path, monkeypatch):
    """A feed-forward's gate and up matrices, and attention's q, k and v, uploaded as one matrix and multiplied in
    one step, give each row the bits separate products give."""
    from kinetic_vulkan import layers

    path = mixed_model(tmp_path / "m.gguf", "llama", Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512))
    tokens = tokens_for(path, 9)
    one = in_batches(kinetic_vulkan.upload(load_stack(path), UploadOptions(context_length=64)), tokens, 9)
    monkeypatch.setattr(layers, "stackable", lambda weights: False)
    two = in_batches(kinetic_vulkan.upload(load_stack(path), UploadOptions(context_length=64)), tokens, 9)
    assert np.array_equal(one, two)


@gpu
def test_a_saved_sequence_resumes_exactly(random_model):
    blob = assert_a_saved_sequence_resumes(runner_for(random_model), random_model)
    with pytest.raises(KineticError, match="not a saved Vulkan sequence state"):
        runner_for(random_model).load(b"KCUDAKV2" + blob[8:])


@gpu
def test_matches_reference(random_model):
    tokens = tokens_for(random_model, 12)
    ours, reference = in_batches(runner_for(random_model), tokens, 12), reference_logits(random_model, tokens)
    difference = np.abs(ours - reference) / reference.std(axis=1, keepdims=True)
    tolerance = TOLERANCE[random_model.stem.rsplit("-", 1)[1]]
    assert difference.mean() < tolerance and difference.max() < 10 * tolerance


@gpu
@pytest.mark.parametrize("family, n_embd, n_head", [("llama", 128, 4), ("gemma3", 128, 4), ("llama", 160, 8)])
def test_long_attention_in_splits(tmp_path, family, n_embd, n_head):
    """Rows that see more positions than one split takes (splits.wgsl), gemma3's sliding window cutting across the
    splits, heads of 20 dims (keys read a word at a time, not four): near the reference, and bit for bit what one row
    at a time gives."""
    window = {"gemma3.attention.sliding_window": 200} if family == "gemma3" else {}
    path = write_random_model(tmp_path / "m.gguf", family, Dims(n_embd=n_embd, n_head=n_head, n_head_kv=2, n_ff=256),
                              weight_type="Q8_0", seed=7, metadata=window)
    tokens = tokens_for(path, 1100)
    runner = kinetic_vulkan.upload(load_stack(path), UploadOptions(context_length=2048))
    ours, reference = in_batches(runner, tokens, 64), reference_logits(path, tokens)
    difference = np.abs(ours - reference) / reference.std(axis=1, keepdims=True)
    assert difference.mean() < TOLERANCE["Q8_0"] and difference.max() < 10 * TOLERANCE["Q8_0"]
    seq = runner.new_sequence()
    in_batches(runner, tokens[:1096], 64, seq=seq)
    assert np.array_equal(in_batches(runner, tokens[1096:], 1, seq=seq), ours[1096:])


@gpu
def test_greedy_tokens_are_the_references(random_model):
    assert_greedy_tokens_near_the_references(runner_for(random_model), random_model)


@gpu
@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.8, "top_k": 40, "seed": 7}], ids=["greedy", "seeded"])
def test_rad1_and_warm_start_change_no_token(tmp_path, settings):
    assert_rad1_and_warm_start_change_no_token(
        tmp_path, settings, lambda **given: SessionOptions(device="vulkan", ctx_size=512, **given))


def test_tall_matrices_take_fewer_lanes_a_row():
    from kinetic_vulkan.layers import lanes_of

    shapes = {(16384, 2048): 8, (128256, 2048): 8, (8192, 2048): 16, (2048, 2048): 32, (2560, 8192): 32, (96, 96): 2}
    assert {shape: lanes_of(SimpleNamespace(rows=shape[0], k=shape[1])) for shape in shapes} == shapes


@gpu
@pytest.mark.parametrize("lanes", [32, 8])
@pytest.mark.parametrize("name", NATIVE + ("Q2_K", "Q3_K"))
def test_matmul_exact_across_batches_and_close_to_float(name, lanes, monkeypatch):
    """Batches of 64, 20, 5 and 1 give each token the same bits, the matrix whole or in parts of 40 rows (a
    binding's limit), with 32 lanes a row or 8 (a tall matrix's); types without a shader run as float16."""
    from kinetic_vulkan import layers
    from kinetic_vulkan.testing import matmul

    monkeypatch.setattr(layers, "LANE_THREADS", 96 * lanes)

    rng = np.random.default_rng(sum(map(ord, name)))
    kind = plugins().tensor_types[name]
    k = 256 * 9 if kind.block_size == 256 else 32 * 73
    weight = random_blocks(name, 96, k, rng)
    floats = kind.dequantize(weight.reshape(-1, kind.type_size)).reshape(96, k)
    x = rng.standard_normal((64, k)).astype(np.float32)
    if name not in NATIVE:
        weight, name = floats.astype(np.float16).view(np.uint8), "F16"
    batch = matmul(weight, name, k, x)
    single = np.concatenate([matmul(weight, name, k, x[t : t + 1]) for t in range(0, 64, 9)])
    assert np.array_equal(batch[::9], single)
    assert np.array_equal(matmul(weight, name, k, x[7:27]), batch[7:27])
    assert np.array_equal(matmul(weight, name, k, x[40:45], binding_limit=40 * weight.shape[1] + 4), batch[40:45])
    exact = x.astype(np.float64) @ floats.astype(np.float64).T
    error = np.linalg.norm(batch - exact, axis=1) / np.linalg.norm(exact, axis=1)
    assert error.max() < (1e-3 if name in FLOATS else 0.02)  # the quantized types against int8 activations


@gpu
@pytest.mark.parametrize("name", NATIVE)
def test_embedding_rows_are_the_cpus(name):
    """The pass looks its tokens' embeddings up on the GPU, the matrix whole or in parts of 40 rows: the CPU's
    dequantized rows times the scale, bit for bit where the type has no min (a driver may fuse a min's add)."""
    from kinetic_vulkan.testing import embed

    rng = np.random.default_rng(sum(map(ord, name)))
    kind = plugins().tensor_types[name]
    k = 256 * 3 if kind.block_size == 256 else 32 * 11
    weight = random_blocks(name, 96, k, rng)
    tokens = np.array([95, 0, 41, 40, 39, 7, 7])
    expected = kind.dequantize(weight[tokens].reshape(-1, kind.type_size)).reshape(len(tokens), k) * np.float32(0.5)
    for limit in (0, 40 * weight.shape[1] + 4):
        rows = embed(weight, name, k, tokens, 0.5, binding_limit=limit)
        if name in ("Q4_1", "Q5_1", "Q4_K", "Q5_K"):
            np.testing.assert_allclose(rows, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max())
        else:
            assert np.array_equal(rows, expected)


@gpu
def test_run_chat_and_serve_on_vulkan(tmp_path):
    """`kinetic run --device vulkan` answers a chat (the same with RAD-1 off), names the GPU in its speed line and
    says nothing of Mesa's windows; `kinetic chat` and `kinetic serve` give the same answer."""
    template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256), "Q8_0",
                              seed=3, metadata={"tokenizer.chat_template": template})
    flags = ["--device", "vulkan", "--temp", "0", "-n", "24", "-c", "256"]

    def kinetic(command: str, *more: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kinetic", command, str(path), *flags, *more], input=stdin,
                              capture_output=True, text=True, timeout=300)

    answer = kinetic("run", "--off", "warm-start", PROMPT)
    assert answer.returncode == 0, answer.stderr
    assert answer.stderr.strip().endswith(f" on {vulkan_adapter.gpu().name}]") and "XDG" not in answer.stderr
    assert answer.stdout.strip() != "" and kinetic("run", "--off", "warm-start,rad1", PROMPT).stdout == answer.stdout
    assert kinetic("chat", "--off", "warm-start", stdin=f"{PROMPT}\n/exit\n").stdout == answer.stdout
    server = subprocess.Popen([sys.executable, "-m", "kinetic", "serve", str(path), *flags, "--port", "0", "-a", "m",
                               "--cache-dir", str(tmp_path / "warm")], stdout=subprocess.PIPE, text=True)
    try:
        url = re.fullmatch(r"Serving m on .+ at (http://127\.0\.0\.1:\d+/v1)", server.stdout.readline().strip())[1]
        body = {"model": "m", "messages": [{"role": "user", "content": PROMPT}], "temperature": 0, "max_tokens": 24}
        request = urllib.request.Request(f"{url}/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        reply = json.load(urllib.request.urlopen(request, timeout=120))
        assert reply["choices"][0]["message"]["content"] + "\n" == answer.stdout
    finally:
        server.kill()
