"""`kinetic fit [MODEL|FOLDER]`: where each model would run (wholly on the GPU, on the GPU with its experts on
the CPU, or on the CPU) and the decode speed to expect from the bytes a token reads and the memory's speed."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

from kinetic import system
from kinetic.cli.models import table_lines
from kinetic.cli.pull import size_text
from kinetic.contracts import ModelFile
from kinetic.errors import file_error
from kinetic.hub.budget import usable_gpu
from kinetic.model.footprint import bytes_per_token, cache_bytes, expert_bytes, expert_bytes_per_token, weight_bytes
from kinetic.stores import all_found
from kinetic.stores.described import Described, describe
from kinetic.stores.found import Found, folder_models
from kinetic.stores.resolve import looks_like_path, named

CONTEXT = 4096  # tokens of cache that must fit beside the weights
GPU_CACHE_BYTES = 2  # the CUDA device keeps keys and values in float16
# Decode reads every weight once per token, so tokens per second is about bandwidth / bytes per token. On the
# CPU the bandwidth is its read speed as doctor measures it (numpy sums on every thread), which the kernels'
# own streaming can beat, while attention, sampling and the small matrices' overheads keep a small CPU below
# it: on a 2-core EPYC reading 16.7 GB/s, tg128 of Qwen2.5-Coder 0.5B runs at 0.95-1.2 and of Gemma 3 270M
# at 0.65-1.2 times that quotient. A GPU reads at 30-80% of its nominal bandwidth, and each layer of a step
# costs about GPU_LAYER_SECONDS of launches and waits besides, which is most of a small model's step: Gemma
# 3 270M's 18 layers ran tg128 at 897 t/s on an H200 (4.8 TB/s), 1.11 ms a token of which reading took
# 0.05. A GPU that reports no bandwidth is estimated at the CPU's (a floor).
SLOWEST, FASTEST = 0.65, 1.2
GPU_SLOWEST, GPU_FASTEST = 0.3, 0.8
GPU_LAYER_SECONDS = 55e-6
HEADER = ("MODEL", "SIZE", "RUNS ON", "EXPECTED DECODE")
LEAST_WIDTHS = (35, 12, 22)  # the spec's table, gaps included


def fit_lines(target: Optional[str]) -> list[str]:
    listed = [describe(found) for found in to_fit(target)]
    if not listed:
        return [f"No GGUF models found{f' in {target}' if target else ''}: download one with kinetic pull ORG/REPO"]
    gpu = usable_gpu()
    gpu_free, gpu_bandwidth = (gpu[1], gpu[0].bandwidth()) if gpu else (None, None)
    bandwidths = Bandwidths(system.memory_read_speed(system.cpu().threads), gpu_bandwidth)
    rows = [(model.found.name, size_text(model.size), *estimate(model, gpu_free, bandwidths)) for model in listed]
    return table_lines([HEADER] + rows, LEAST_WIDTHS)


def to_fit(target: Optional[str]) -> list[Found]:
    """Every model found; the models under a folder; a file; or the model of that name."""
    if target is None:
        return all_found()
    path = Path(target).expanduser()
    if path.is_dir():
        return folder_models(path, "folder")
    if not looks_like_path(path):
        return [named(target, all_found())]
    if not path.is_file():
        raise file_error(path, FileNotFoundError())
    return [Found(path.stem, (path,), "file")]


class Bandwidths(NamedTuple):
    cpu: float  # bytes per second, measured
    gpu: Optional[float]  # nominal; None without a GPU that says


def estimate(model: Described, gpu_free: Optional[int], bandwidths: Bandwidths) -> tuple[str, str]:
    """(where it runs, the decode speed range) or, for a model Kinetic does not run, (why not, "-")."""
    if model.model is None:
        return model.runs, "-"
    where = placement(model.model, gpu_free)
    slow, fast = (decode_rate(model.model, where, bandwidths, fractions) for fractions in
                  ((SLOWEST, GPU_SLOWEST), (FASTEST, GPU_FASTEST)))
    return where, f"{speed(slow)}-{speed(fast)} t/s"


def decode_rate(model: ModelFile, where: str, bandwidths: Bandwidths, fractions: tuple[float, float]) -> float:
    """Tokens per second where the CPU reads at fractions[0] of its bandwidth and the GPU at fractions[1]."""
    total = bytes_per_token(model)
    on_cpu = {"GPU": 0, "GPU, experts on CPU": expert_bytes_per_token(model)}.get(where, total)
    if bandwidths.gpu is None:
        return fractions[0] * bandwidths.cpu / total
    seconds = on_cpu / (fractions[0] * bandwidths.cpu)
    if on_cpu < total:
        layers = int(model.arch_value("block_count", 1))
        seconds += (total - on_cpu) / (fractions[1] * bandwidths.gpu) + layers * GPU_LAYER_SECONDS
    return 1 / seconds


def placement(model: ModelFile, gpu_free: Optional[int]) -> str:
    if gpu_free is None:
        return "CPU"
    cache = cache_bytes(model, CONTEXT, GPU_CACHE_BYTES)
    if weight_bytes(model) + cache <= gpu_free:
        return "GPU"
    experts = expert_bytes(model)
    if experts and weight_bytes(model) - experts + cache <= gpu_free:
        return "GPU, experts on CPU"
    return "CPU"


def speed(tokens_per_second: float) -> str:
    return f"{tokens_per_second:.0f}" if tokens_per_second >= 10 else f"{tokens_per_second:.1f}"
