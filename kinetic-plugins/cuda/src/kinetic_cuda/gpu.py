"""Finding the GPU: whether an NVIDIA driver is here at all, whether CuPy can use its first GPU (compute
capability 8.0 or newer: the prompt products stage tiles with cp.async and multiply with the m16n8k32 int8
mma, both sm_80 and later), and its name. CuPy is imported inside the functions that need it."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Optional

MIN_CAPABILITY = (8, 0)
MEMORY_CLOCK_RATE, MEMORY_BUS_WIDTH = 36, 37  # cudaDevAttrMemoryClockRate (kHz), cudaDevAttrGlobalMemoryBusWidth
# the NVIDIA kernel module and its control node (Linux, containers and sandboxes that pass the GPU through), the
# driver library WSL mounts; nvidia-smi comes with every driver
DRIVER_FILES = ("/proc/driver/nvidia", "/dev/nvidiactl", "/usr/lib/wsl/lib/libcuda.so.1")


def driver_present() -> bool:
    """Whether this machine has an NVIDIA driver, found without loading it."""
    return any(Path(path).exists() for path in DRIVER_FILES) or shutil.which("nvidia-smi") is not None


def probe() -> Optional[str]:
    try:
        import cupy
    except ImportError as error:
        return f"CuPy is not installed ({error}); pip install 'kinetic-engine[cuda]' (CUDA 12) or 'kinetic-engine[cuda13]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as error:
        return f"no NVIDIA driver answers ({_one_line(error)})"
    if count == 0:
        return "no NVIDIA GPU is visible"
    major, minor = divmod(int(cupy.cuda.Device(0).compute_capability), 10)
    if (major, minor) < MIN_CAPABILITY:
        name = gpu_name()
        return f"{name} has compute capability {major}.{minor}; the CUDA device needs 8.0 or newer"
    return None


def gpu_name() -> str:
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def free_memory() -> int:
    """Bytes Kinetic may still take on the first GPU: those free now, fewer under a cap_memory cap (call only
    when probe() finds it usable)."""
    import cupy

    free = cupy.cuda.runtime.memGetInfo()[0]
    pool = cupy.get_default_memory_pool()
    return min(free, pool.get_limit() - pool.used_bytes()) if pool.get_limit() else free


def cap_memory(cap: int) -> None:
    """Take no more than cap bytes of GPU memory (--gpu-memory): CuPy's pool, which every array comes from,
    refuses more."""
    import cupy

    cupy.get_default_memory_pool().set_limit(size=cap)


def bandwidth() -> Optional[float]:
    """The first GPU's nominal memory bandwidth in bytes per second: two transfers per memory clock over the
    bus width (call only when probe() finds it usable); None where the driver does not say."""
    import cupy

    try:
        clock_khz = cupy.cuda.runtime.deviceGetAttribute(MEMORY_CLOCK_RATE, 0)
        bus_bits = cupy.cuda.runtime.deviceGetAttribute(MEMORY_BUS_WIDTH, 0)
    except cupy.cuda.runtime.CUDARuntimeError:
        return None
    return 2 * clock_khz * 1e3 * bus_bits / 8 if clock_khz > 0 and bus_bits > 0 else None


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


@functools.lru_cache(maxsize=None)
def multiprocessors() -> int:
    """The multiprocessor count of the GPU in use (CuPy's current device; the device plugin uses the first)."""
    import cupy

    return cupy.cuda.Device().attributes["MultiProcessorCount"]
