"""The kernels (kernels/*.cu) compiled once per process by NVRTC into one CuPy RawModule.

--fmad=false keeps every multiply and add of plain expressions separate, as the CPU device computes
them; the sums that decide exactness use explicit _rn intrinsics anyway. CuPy caches the compiled
module on disk (~/.cupy/kernel_cache), so a machine compiles it once.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

SOURCES = ("quants.cuh", "matmul.cu", "elementwise.cu", "norm_rope.cu", "attention.cu")
OPTIONS = ("--std=c++17", "--fmad=false")


def source() -> str:
    folder = resources.files("kinetic_cuda") / "kernels"
    return "\n".join((folder / name).read_text() for name in SOURCES)


@lru_cache(maxsize=None)
def module():
    import cupy

    return cupy.RawModule(code=source(), options=OPTIONS)


@lru_cache(maxsize=None)
def kernel(name: str):
    """A kernel by its extern "C" name. Loading the module here, before any CUDA graph capture, matters:
    a module cannot be loaded while a stream captures."""
    return module().get_function(name)
