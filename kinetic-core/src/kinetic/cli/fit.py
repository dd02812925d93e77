"""`kinetic fit [MODEL|FOLDER]`: where each model would run (wholly on the GPU, on the GPU with its experts on
the CPU, or on the CPU) and the decode speed to expect from the bytes a token reads and the memory's speed."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from kinetic import system
from kinetic.cli.models import table_lines
from kinetic.cli.pull import size_text
from kinetic.contracts import ModelFile
from kinetic.errors import file_error
from kinetic.hub.budget import usable_gpu
from kinetic.model.footprint import bytes_per_token, cache_bytes, expert_bytes, weight_bytes
from kinetic.stores import all_found
from kinetic.stores.described import Described, describe
from kinetic.stores.found import Found, folder_models
from kinetic.stores.resolve import looks_like_path, named

CONTEXT = 4096  # tokens of cache that must fit beside the weights
GPU_CACHE_BYTES = 2  # the CUDA device keeps keys and values in float16
# Decode reads every weight once per token, so tokens per second is about bandwidth / bytes per token. The
# bandwidth is the CPU's read speed as doctor measures it (numpy sums on every thread), which the kernels'
# own streaming can beat (Shortlist also reads only part of the output layer), while attention, sampling
# and the small matrices' overheads keep a small CPU below it: on a 2-core EPYC reading 16.7 GB/s, tg128
# of Qwen2.5-Coder 0.5B runs at 0.95-1.2 and of Gemma 3 270M at 0.65-1.2 times that quotient. Until the GPU
# devices report a bandwidth, a model on the GPU is estimated at the CPU's (a floor for the GPU).
SLOWEST, FASTEST = 0.65, 1.2
HEADER = ("MODEL", "SIZE", "RUNS ON", "EXPECTED DECODE")
LEAST_WIDTHS = (35, 12, 22)  # the spec's table, gaps included


def fit_lines(target: Optional[str]) -> list[str]:
    listed = [describe(found) for found in to_fit(target)]
    if not listed:
        return [f"No GGUF models found{f' in {target}' if target else ''}: download one with kinetic pull ORG/REPO"]
    gpu = usable_gpu()
    gpu_free = gpu[1] if gpu else None
    bandwidth = system.memory_read_speed(system.cpu().threads)
    rows = [(model.found.name, size_text(model.size), *estimate(model, gpu_free, bandwidth)) for model in listed]
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


def estimate(model: Described, gpu_free: Optional[int], bandwidth: float) -> tuple[str, str]:
    """(where it runs, the decode speed range) or, for a model Kinetic does not run, (why not, "-")."""
    if model.model is None:
        return model.runs, "-"
    rate = bandwidth / bytes_per_token(model.model)
    return placement(model.model, gpu_free), f"{speed(SLOWEST * rate)}-{speed(FASTEST * rate)} t/s"


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
