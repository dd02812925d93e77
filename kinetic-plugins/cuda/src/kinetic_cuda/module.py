"""The kernels (kernels/*.cu) compiled once per process by NVRTC into one CuPy RawModule, timed.

--fmad=false keeps every multiply and add of plain expressions separate, as the CPU device computes
them; the sums that decide exactness use explicit _rn intrinsics anyway. CuPy caches the compiled
module on disk (~/.cupy/kernel_cache), so a machine compiles it once.
"""

from __future__ import annotations

import time
from functools import lru_cache
from importlib import resources

SOURCES = ("quants.cuh", "matmul.cu", "elementwise.cu", "norm_rope.cu", "attention.cu", "recurrent.cu", "experts.cu")
OPTIONS = ("--std=c++17", "--fmad=false")


def source() -> str:
    folder = resources.files("kinetic_cuda") / "kernels"
    return "\n".join((folder / name).read_text() for name in SOURCES)


_built_in = 0.0  # seconds module() took


@lru_cache(maxsize=None)
def module():
    import cupy

    global _built_in
    started = time.perf_counter()
    compiled = cupy.RawModule(code=source(), options=OPTIONS)
    compiled.compile()
    _built_in = time.perf_counter() - started
    return compiled


def compile_seconds() -> float:
    """How long building the module took in this process (loading it from CuPy's cache takes a moment)."""
    return _built_in


@lru_cache(maxsize=None)
def kernel(name: str):
    """A kernel by its extern "C" name. Loading the module here, before any CUDA graph capture, matters:
    a module cannot be loaded while a stream captures."""
    return module().get_function(name)
