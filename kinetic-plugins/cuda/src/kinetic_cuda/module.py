"""The kernels (kernels/*.cu) as one CuPy RawModule, once per process: the shipped build for this chip when it
loads, else compiled by NVRTC here, timed.

scripts/build_cuda_kernels.py ships kernels/built/: a cubin per architecture, PTX for the oldest, and a stamp of
the sources they came from. A chip loads the cubin of its own major revision with the highest minor not above
its own, else the PTX (the driver compiles it for a newer chip), and only while the stamp matches the sources.
A driver that refuses them (older than the compiler that built them) leaves NVRTC, whose module CuPy caches
on disk (~/.cupy/kernel_cache), so such a machine compiles once.

--fmad=false keeps every multiply and add of plain expressions separate, as the CPU device computes them; the
sums that decide exactness use explicit _rn intrinsics anyway, so either way gives the same bits.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from kinetic.progress import CompileClock

SOURCES = ("quants.cuh", "matmul.cu", "elementwise.cu", "norm_rope.cu", "attention.cu", "recurrent.cu", "experts.cu")
OPTIONS = ("--std=c++17", "--fmad=false")
BUILT = Path(__file__).resolve().parent / "kernels" / "built"
STAMP = "stamp.json"


def source() -> str:
    folder = resources.files("kinetic_cuda") / "kernels"
    return "\n".join((folder / name).read_text() for name in SOURCES)


def source_digest() -> str:
    """SHA-256 of the sources and options: what the shipped files' stamp must name."""
    return hashlib.sha256("\0".join((source(), *OPTIONS)).encode()).hexdigest()


def shipped(capability: int, folder: Path = BUILT) -> list[Path]:
    """The shipped files a chip of compute capability capability (90 for 9.0) may load, best first: the
    cubin of its major revision with the highest minor not above its own, then the PTX of an older or the same
    chip; none when the stamp is missing, names other sources, or a file's hash differs."""
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return []
    if stamp.get("sources") != source_digest():
        return []
    major, minor = divmod(capability, 10)
    cubins, ptx = [], []
    for name in stamp.get("files", {}):
        stem, kind = name.rsplit(".", 1)
        built_major, built_minor = divmod(int(stem.split("_")[1]), 10)
        if kind == "cubin" and built_major == major and built_minor <= minor:
            cubins.append((built_minor, name))
        elif kind == "ptx" and (built_major, built_minor) <= (major, minor):
            ptx.append(((built_major, built_minor), name))
    chosen = [name for _, name in sorted(cubins, reverse=True)[:1] + sorted(ptx, reverse=True)[:1]]
    return [folder / name for name in chosen if _intact(folder / name, stamp["files"][name])]


def _intact(path: Path, digest: str) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == digest
    except OSError:
        return False


CLOCK = CompileClock("compiling CUDA kernels, once, about 20 s")  # loading them from CuPy's cache takes a moment


@lru_cache(maxsize=None)
def module():
    import cupy

    for path in shipped(int(cupy.cuda.Device(0).compute_capability)):
        try:
            loaded = cupy.RawModule(path=str(path))
            loaded.compile()  # cuModuleLoad, here: a file the driver refuses raises now, not at the first launch
            return loaded
        except cupy.cuda.driver.CUDADriverError:
            continue
    with CLOCK.during():
        compiled = cupy.RawModule(code=source(), options=OPTIONS)
        compiled.compile()
    return compiled


@lru_cache(maxsize=None)
def kernel(name: str):
    """A kernel by its extern "C" name. Loading the module here, before any CUDA graph capture, matters:
    a module cannot be loaded while a stream captures."""
    return module().get_function(name)
