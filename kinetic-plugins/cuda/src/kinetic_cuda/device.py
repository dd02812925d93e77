"""The CUDA device: usable where CuPy imports and finds a GPU of compute capability 8.0 or newer (the prompt
products stage tiles with cp.async and multiply with the m16n8k32 int8 mma, both sm_80 and later)."""

from __future__ import annotations

from typing import Optional

from kinetic.errors import KineticError
from kinetic.contracts.blocks import Stack
from kinetic.contracts import Device
from kinetic.contracts.device import UploadOptions

MIN_CAPABILITY = (8, 0)


def probe() -> Optional[str]:
    try:
        import cupy
    except ImportError as error:
        return f"CuPy is not installed ({error}); pip install 'kinetic[cuda]' and cupy-cuda12x or cupy-cuda13x"
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


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())


def upload(stack: Stack, options: UploadOptions):
    from kinetic_cuda.support import refusal

    reason = refusal(stack) or probe()
    if reason:
        raise KineticError(f"CUDA cannot run this model: {reason}")
    from kinetic_cuda.runner import CudaRunner

    return CudaRunner(stack, options)


CUDA = Device(name="cuda", probe=probe, upload=upload)
