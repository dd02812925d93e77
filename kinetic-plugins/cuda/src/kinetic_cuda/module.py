"""The kernels (kernels/*.cu) compiled once per process by NVRTC into one CuPy RawModule, timed.

--fmad=false keeps every multiply and add of plain expressions separate, as the CPU device computes
them; the sums that decide exactness use explicit _rn intrinsics anyway. CuPy caches the compiled
module on disk (~/.cupy/kernel_cache), so a machine compiles it once.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from kinetic.progress import CompileClock

SOURCES = ("quants.cuh", "matmul.cu", "elementwise.cu", "norm_rope.cu", "attention.cu", "recurrent.cu", "experts.cu")
OPTIONS = ("--std=c++17", "--fmad=false")


def source() -> str:
    folder = resources.files("kinetic_cuda") / "kernels"
    return "\n".join((folder / name).read_text() for name in SOURCES)


CLOCK = CompileClock("compiling CUDA kernels, once, about 20 s")  # loading them from CuPy's cache takes a moment


@lru_cache(maxsize=None)
def module():
    import cupy

    with CLOCK.during():
        compiled = cupy.RawModule(code=source(), options=OPTIONS)
        compiled.compile()
    return compiled


@lru_cache(maxsize=None)
def kernel(name: str):
    """A kernel by its extern "C" name. Loading the module here, before any CUDA graph capture, matters:
    a module cannot be loaded while a stream captures."""
    return module().get_function(name)
