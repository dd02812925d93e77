"""The CUDA device: a batch gives each token's logits bit for bit as one-at-a-time decoding does, with either
KV cache type, and it agrees with the numpy reference executor, for every family; every weight type's product is exact across
batches and close to the float product. The GPU tests skip where CUDA is not usable (CI has no GPU),
with the probe's reason; they run on an NVIDIA machine."""

from __future__ import annotations

import dataclasses
import sys
import types
from functools import lru_cache
from pathlib import Path

import gguf
from gguf.quants import quantize
import numpy as np
import pytest

from kinetic.contracts.blocks import Attention, Experts
from kinetic.contracts.device import UploadOptions
import kinetic.engine.devices as devices_module
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.hookspecs import hookimpl
from kinetic.model.load import load_stack
from kinetic.plugins import load_plugins, plugins
from kinetic.testing.gguf_factory import ARCHITECTURES, Dims, write_random_model
from kinetic.testing.random_weights import random_blocks

from device_checks import (assert_a_saved_sequence_resumes, assert_batches_equal_one_at_a_time,
                           assert_greedy_tokens_near_the_references, assert_rad1_and_warm_start_change_no_token,
                           assert_sequences_share_a_pass_and_truncate, in_batches, mixed_model, reference_logits,
                           tokens_for)

kinetic_cuda = pytest.importorskip("kinetic_cuda.device", reason="the kinetic-cuda plugin is not installed")
import kinetic_cuda.gpu as cuda_gpu  # noqa: E402
from kinetic_cuda.support import FLOATS, QUANTIZED  # noqa: E402

REASON = kinetic_cuda.probe()
gpu = pytest.mark.skipif(REASON is not None, reason=f"CUDA is not usable here: {REASON}")

FAMILIES = ARCHITECTURES
# int8 activations where the reference multiplies in float32 (as on the CPU device): the logits differ by
# a small fraction of their spread, the mean difference under TOLERANCE and the largest under 10 times it.
# Measured on the H200: mean 0.006 to 0.02 for Q8_0 files; 0.02 to 0.03 for the Q4_K_M mix, whose random
# K-quant blocks have heavier tails than trained weights.
TOLERANCE = {"Q8_0": 0.02, "Q4_K_M": 0.04, "MXFP4": 0.04}


def mxfp4_experts_model(path: Path, arch: str) -> Path:
    """A random Q8_0 model whose experts are MXFP4, as gpt-oss ships them (gguf-py quantizes MXFP4)."""
    dims = Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512)
    write_random_model(path, arch, dims, weight_type="Q8_0", seed=7)
    rng = np.random.default_rng(13)
    extra = {}
    for tensor in gguf.GGUFReader(path).tensors:
        if tensor.name.endswith(("_exps.weight")):
            values = rng.standard_normal(tuple(int(n) for n in tensor.shape[::-1]), dtype=np.float32) * 0.1
            extra[tensor.name] = (quantize(values, gguf.GGMLQuantizationType.MXFP4), gguf.GGMLQuantizationType.MXFP4)
    return write_random_model(path, arch, dims, weight_type="Q8_0", seed=7, extra_tensors=extra)


WEIGHTS = {
    "Q8_0": lambda path, arch: write_random_model(path, arch, Dims(n_embd=128, n_head=4, n_head_kv=2, n_ff=256),
                                                  weight_type="Q8_0", seed=7),
    "Q4_K_M": lambda path, arch: mixed_model(path, arch, Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512)),
    "MXFP4": mxfp4_experts_model,
}
MODELS = [(f, w) for f in FAMILIES for w in ("Q8_0", "Q4_K_M")] + [("gpt-oss", "MXFP4")]


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: f"{p[0]}-{p[1]}")
def random_model(request, tmp_path_factory) -> Path:
    family, weights = request.param
    return WEIGHTS[weights](tmp_path_factory.mktemp("cuda") / f"{family}-{weights}.gguf", family)


def tolerance(path: Path) -> float:
    return TOLERANCE[path.stem.rsplit("-", 1)[1]]


F16, Q8_0 = ("f16", "f16"), ("q8_0", "q8_0")
CACHES = [F16, Q8_0, ("q8_0", "f16")]  # (-ctk, -ctv)


@lru_cache(maxsize=None)
def runner_for(path: Path, caches: tuple[str, str] = F16):
    return plugins().devices["cuda"].upload(load_stack(path), UploadOptions(context_length=1024, cache_types=caches))


def test_probe_is_one_line_or_usable():
    """None only where CuPy runs work on a GPU the device can use; else one line saying why not."""
    reason = kinetic_cuda.probe()
    if reason is None:
        import cupy

        assert divmod(int(cupy.cuda.Device(0).compute_capability), 10) >= cuda_gpu.MIN_CAPABILITY
        assert int(cupy.arange(5).sum()) == 10
    else:
        assert reason == reason.strip() != "" and "\n" not in reason


def test_probe_folds_a_driver_error_into_one_line(monkeypatch):
    class CUDARuntimeError(Exception):
        pass

    def no_driver():
        raise CUDARuntimeError("cudaErrorInsufficientDriver:\n  CUDA driver version is insufficient")

    runtime = types.SimpleNamespace(CUDARuntimeError=CUDARuntimeError, getDeviceCount=no_driver)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime)))
    reason = kinetic_cuda.probe()
    assert "\n" not in reason and "cudaErrorInsufficientDriver: CUDA driver version is insufficient" in reason


def test_probe_without_cupy_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy now raises ImportError
    assert kinetic_cuda.probe().startswith("CuPy is not installed")


def test_a_driver_is_found_by_its_files_or_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_gpu, "DRIVER_FILES", (str(tmp_path / "nvidia"),))
    monkeypatch.setattr(cuda_gpu.shutil, "which", lambda name: None)
    assert not cuda_gpu.driver_present()
    (tmp_path / "nvidia").mkdir()
    assert cuda_gpu.driver_present()
    monkeypatch.setattr(cuda_gpu, "DRIVER_FILES", ())
    monkeypatch.setattr(cuda_gpu.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    assert cuda_gpu.driver_present()


@pytest.mark.parametrize("driver", [False, True], ids=["no-driver", "driver"])
def test_auto_names_cuda_only_where_a_driver_is_present(tmp_path, monkeypatch, driver):
    """Without CuPy, --device auto runs on the CPU; it says why CUDA is not usable only on a machine with an
    NVIDIA driver: on others the line would be noise."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy now raises ImportError
    cuda = dataclasses.replace(kinetic_cuda.CUDA, present=lambda: driver)
    module = types.ModuleType("devices")
    module.register_devices = hookimpl(lambda register: [register(cuda), register(plugins().devices["cpu"])])
    monkeypatch.setattr(devices_module, "plugins", lambda: load_plugins(extra=[("devices", module)],
                                                                         use_entry_points=False))
    path = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128))
    lines: list[str] = []
    device, _ = devices_module.open_runner(load_stack(path), "auto", UploadOptions(context_length=64), lines.append)
    assert device.name == "cpu"
    said = [line for line in lines if line.startswith("kinetic: running on the CPU; CUDA is not usable: CuPy is not ")]
    assert said == lines and len(lines) == driver


def q2_k_model(path: Path) -> Path:
    q2_k = random_blocks("Q2_K", 256, 256, np.random.default_rng(0))
    return write_random_model(path, "llama", Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=256),
                              extra_tensors={"blk.1.ffn_up.weight": (q2_k, gguf.GGMLQuantizationType.Q2_K)})


def odd_mxfp4_rows_model(path: Path) -> Path:
    """MXFP4 rows of 3 blocks: 51 bytes."""
    up = quantize(np.random.default_rng(0).standard_normal((128, 96), dtype=np.float32), gguf.GGMLQuantizationType.MXFP4)
    return write_random_model(path, "llama", Dims(n_embd=96, n_head=2, n_head_kv=2, n_ff=128),
                              extra_tensors={"blk.1.ffn_up.weight": (up, gguf.GGMLQuantizationType.MXFP4)})


# a file CUDA has no kernel for, and the line saying so
REFUSED = {
    "Q2_K": (q2_k_model, "CUDA has no kernel for Q2_K weights (blk.1.ffn_up.weight)"),
    "MXFP4-odd-rows": (odd_mxfp4_rows_model, "CUDA needs rows of an even number of bytes (blk.1.ffn_up.weight: 51)"),
    "encoder": (lambda path: write_random_model(path, "bert", Dims(n_embd=256, n_head=4, n_head_kv=4)),
                "CUDA has no kernels for encoders (bidirectional attention, LayerNorm) yet"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_upload_refuses_what_it_has_no_kernel_for_in_one_line(tmp_path, name):
    write, line = REFUSED[name]
    with pytest.raises(KineticError) as refused:
        kinetic_cuda.upload(load_stack(write(tmp_path / "m.gguf")), UploadOptions(context_length=64))
    assert str(refused.value) == f"CUDA cannot run this model: {line}"


@dataclasses.dataclass(frozen=True)
class Novel:
    """A block no device has a kernel for."""


def test_upload_refuses_a_block_without_kernel(tmp_path):
    stack = load_stack(write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=256, n_head=4, n_head_kv=2)))
    stack = dataclasses.replace(stack, blocks=(*stack.blocks, Novel()))
    with pytest.raises(KineticError, match=r"^CUDA cannot run this model: CUDA has no kernel for Novel blocks$"):
        kinetic_cuda.upload(stack, UploadOptions(context_length=64))


@gpu
@pytest.mark.parametrize("caches", CACHES, ids="-".join)
def test_batches_equal_one_at_a_time(random_model, caches):
    assert_batches_equal_one_at_a_time(runner_for(random_model, caches), random_model)


@gpu
@pytest.mark.parametrize("caches", [F16, Q8_0], ids="-".join)
def test_a_512_token_batch_equals_one_at_a_time(random_model, caches):
    runner = runner_for(random_model, caches)
    tokens = tokens_for(random_model, 512)
    assert np.array_equal(in_batches(runner, tokens, 512), in_batches(runner, tokens, 1))


@gpu
@pytest.mark.parametrize("caches", [F16, Q8_0], ids="-".join)
def test_sequences_sharing_a_pass_and_truncation(random_model, caches):
    assert_sequences_share_a_pass_and_truncate(runner_for(random_model, caches), random_model)


@gpu
@pytest.mark.parametrize("arch, shares", [("qwen2", True), ("qwen3moe", True), ("gemma3", True), ("lfm2", False),
                                          ("granitehybrid", False), ("qwen35", False)])
def test_passes_are_shared_but_where_blocks_keep_a_sequences_state(tmp_path, arch, shares):
    """Convoy's one pass for several sequences, but for short convolutions' kept rows and recurrent states; the
    server's default slots fit in free GPU memory."""
    path = write_random_model(tmp_path / "m.gguf", arch, Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512), "Q8_0",
                              seed=3)
    runner = runner_for(path)
    assert runner.shares_passes is shares
    from kinetic_cuda.gpu import free_memory
    assert runner.sequences_that_fit() > 4 if free_memory() > 1 << 30 else runner.sequences_that_fit() >= 1


@gpu
@pytest.mark.parametrize("caches", CACHES, ids="-".join)
def test_a_saved_sequence_resumes_exactly(random_model, caches):
    """A saved state resumes exactly (device_checks); a state of other cache types does not load."""
    blob = assert_a_saved_sequence_resumes(runner_for(random_model, caches), random_model)
    other_types = runner_for(random_model, next(c for c in CACHES if c != caches))
    with pytest.raises(KineticError, match="not a saved CUDA sequence state"):
        other_types.load(blob)


@gpu
@pytest.mark.parametrize("order", [64, 128, 256])
def test_q8_0_caches_quantize_and_turn_as_the_cpu_does(order):
    """store_q8 writes the CPU cache's q8_0 bytes, and the rotation gives kinetic_cpu's ops.rotated bits."""
    import cupy
    from kinetic_cpu import ops as cpu_ops
    from kinetic_cpu.cache import quantize_q8_0
    from kinetic_cuda import cache as cuda_cache, ops as cuda_ops

    x = (np.random.default_rng(order).standard_normal((5, 2 * order)) * 3).astype(np.float32)
    x[:, 7] = 90.0  # an outlier, as Qwen's keys have
    turned = cupy.asarray(x)
    cuda_ops.rotate(turned, 5, order)
    assert np.array_equal(turned.get(), cpu_ops.rotated(x, order))
    cache = cuda_cache.new_cache("q8_0", 8, 2 * order)
    cuda_ops.store_q8(cupy.asarray(x), cupy.asarray(np.array([6, 0, 3, 1, 2], np.int32)), 5, cache)
    quants, scales = (cupy.asnumpy(part) for part in cuda_cache._parts(cache, "q8_0", 8, 2 * order))
    blocks = quantize_q8_0(x).reshape(5, -1, 34)
    for row, position in enumerate([6, 0, 3, 1, 2]):
        assert np.array_equal(quants.reshape(8, -1)[position].view(np.int8), blocks[row, :, 2:].reshape(-1))
        assert np.array_equal(scales.reshape(8, -1)[position], blocks[row, :, :2].reshape(-1).view(np.uint8))


@gpu
def test_the_context_shrinks_to_fit_unless_given(tmp_path, monkeypatch):
    """Without -c, a context whose cache does not fit shrinks to the largest multiple of 1024 that does, at
    least 4096 (reference docs, -c); a context the user gave is refused instead, with the sizes."""
    from kinetic_cuda import runner as cuda_runner

    path = write_random_model(tmp_path / "ctx.gguf", "llama", Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=256), "Q8_0")
    stack = load_stack(path)
    widths = [b.n_head_kv * b.head_dim for b in stack.blocks if isinstance(b, Attention)]
    needed = cuda_runner.upload_bytes(cuda_runner.matrices(stack)) + cuda_runner._scratch_bytes(
        cuda_runner.Shape.of(stack), widths, 6500)
    monkeypatch.setattr(cuda_runner.cupy.cuda.runtime, "memGetInfo", lambda: (needed, 2 * needed))
    assert kinetic_cuda.upload(stack, UploadOptions(context_length=65536)).context_length == 6144
    with pytest.raises(KineticError, match=r"^CUDA cannot run this model: it needs .* GiB free$"):
        kinetic_cuda.upload(stack, UploadOptions(context_length=65536, context_given=True))


@gpu
@pytest.mark.parametrize("weights", list(WEIGHTS))
@pytest.mark.parametrize("family", ["qwen3moe", "granitemoe", "gpt-oss"])  # gpt-oss: its slots' biases
def test_flywheel_gives_the_bits_of_every_expert_on_the_gpu(tmp_path, monkeypatch, family, weights):
    """With free memory for 3 of a layer's 8 experts beside the rest, prompts of 40, 7 and 1 tokens (whose picks
    need several batches of slots) give the logits of the upload that holds every expert."""
    from kinetic_cuda import runner as cuda_runner

    path = WEIGHTS[weights](tmp_path / f"{family}-{weights}.gguf", family)
    tokens = tokens_for(path, 40)
    whole = in_batches(runner_for(path), tokens, 40)
    stack = load_stack(path)
    rest, per_slot = cuda_runner.flywheel_bytes(stack)
    widths = [b.n_head_kv * b.head_dim for b in stack.mixers() if isinstance(b, Attention)]
    scratch = cuda_runner._scratch_bytes(cuda_runner.Shape.of(stack), widths, 1024)
    monkeypatch.setattr(cuda_runner, "RESERVE", 0)
    monkeypatch.setattr(cuda_runner, "free_memory", lambda: rest + scratch + 3 * per_slot)
    runner = kinetic_cuda.upload(stack, UploadOptions(context_length=1024, context_given=True))
    mixtures = [b for b in stack.mixers() if isinstance(b, Experts)]
    assert [b.cache.slots.n_slots for b in runner.blocks if getattr(b, "cache", None)] == [3] * len(mixtures)
    for size in (40, 7, 1):
        assert np.array_equal(in_batches(runner, tokens, size), whole), size


@gpu
def test_gpu_memory_caps_what_the_device_takes():
    import cupy

    pool = cupy.get_default_memory_pool()
    try:
        cuda_gpu.cap_memory(pool.used_bytes() + (64 << 20))
        assert cuda_gpu.free_memory() == min(64 << 20, cupy.cuda.runtime.memGetInfo()[0])
        with pytest.raises(cupy.cuda.memory.OutOfMemoryError):
            cupy.empty(128 << 20, cupy.uint8)
    finally:
        pool.set_limit(size=0)


@gpu
@pytest.mark.parametrize("settings", [{"temp": 0}, {"temp": 0.8, "top_k": 40, "seed": 7}], ids=["greedy", "seeded"])
@pytest.mark.parametrize("caches", [F16, Q8_0], ids="-".join)
def test_rad1_and_warm_start_change_no_token(tmp_path, settings, caches):
    assert_rad1_and_warm_start_change_no_token(
        tmp_path, settings, lambda **given: SessionOptions(device="cuda", ctx_size=512, cache_types=caches, **given))


@gpu
def test_the_servers_warm_up_leaves_no_trace(tmp_path):
    path = write_random_model(tmp_path / "m.gguf", "qwen2", Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512), "Q8_0")
    session = Session(path, SessionOptions(device="cuda", ctx_size=512, off=("warm-start",)), announce=lambda line: None)
    prompt, greedy = [1, *range(260, 280)], session.settings({"temp": 0})
    seq = session.new_sequence()
    session.warm_up(seq)
    assert seq.n_tokens == 0
    assert list(session.generate(seq, prompt, greedy, 20)) == list(session.generate(session.new_sequence(), prompt,
                                                                                    greedy, 20))


# files whose router picks other experts than the float reference's at a near-tie once activations are int8, on
# the CPU as on CUDA (gpt-oss Q8_0: mean difference 0.0291 on both, 1.1 at that position): compared with the CPU's
INT8_ROUTING = ("gpt-oss-Q8_0",)


@gpu
def test_matches_reference(random_model):
    tokens = tokens_for(random_model, 12)
    ours, reference = in_batches(runner_for(random_model), tokens, 12), reference_logits(random_model, tokens)
    if random_model.stem in INT8_ROUTING:
        cpu = plugins().devices["cpu"].upload(load_stack(random_model), UploadOptions(context_length=1024))
        reference = in_batches(cpu, tokens, 12)
    difference = np.abs(ours - reference) / reference.std(axis=1, keepdims=True)
    assert difference.mean() < tolerance(random_model) and difference.max() < 10 * tolerance(random_model)


@gpu
def test_greedy_tokens_are_the_references(random_model):
    assert_greedy_tokens_near_the_references(runner_for(random_model), random_model)


K_QUANTS = ("Q4_K", "Q5_K", "Q6_K")


@gpu
@pytest.mark.parametrize("name", QUANTIZED + FLOATS)
def test_matmul_exact_across_batches_and_close_to_float(name):
    """Batches of 64 and 20 (int8 tensor cores for the quantized types), 5 (a partial matvec tile) and 1
    give each token the same bits; rows of 96 are a tile and a half of the tensor-core kernel."""
    from kinetic_cuda.testing import matmul

    rng = np.random.default_rng(sum(map(ord, name)))
    k = 256 * 9 if name in K_QUANTS else 32 * (74 if name == "MXFP4" else 73)  # MXFP4: rows of even bytes
    weight = random_blocks(name, 96, k, rng)
    x = rng.standard_normal((64, k)).astype(np.float32)
    batch = matmul(weight, name, k, x)
    single = np.concatenate([matmul(weight, name, k, x[t : t + 1]) for t in range(0, 64, 9)])
    assert np.array_equal(batch[::9], single)
    assert np.array_equal(matmul(weight, name, k, x[7:27]), batch[7:27])
    assert np.array_equal(matmul(weight, name, k, x[40:45]), batch[40:45])
    kind = plugins().tensor_types[name]
    floats = kind.dequantize(weight.reshape(-1, kind.type_size)).reshape(96, k).astype(np.float64)
    exact = x.astype(np.float64) @ floats.T
    error = np.linalg.norm(batch - exact, axis=1) / np.linalg.norm(exact, axis=1)
    assert error.max() < (0.02 if name in QUANTIZED else 1e-5)
