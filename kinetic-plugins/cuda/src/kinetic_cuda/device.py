"""The CUDA device: the first NVIDIA GPU, through CuPy (gpu.py says when it is usable)."""

from __future__ import annotations

from kinetic.errors import KineticError
from kinetic.contracts.blocks import Stack
from kinetic.contracts import Device
from kinetic.contracts.device import UploadOptions
from kinetic_cuda.gpu import probe


def upload(stack: Stack, options: UploadOptions):
    from kinetic_cuda.support import refusal

    reason = refusal(stack) or probe()
    if reason:
        raise KineticError(f"CUDA cannot run this model: {reason}")
    from kinetic_cuda.runner import CudaRunner

    return CudaRunner(stack, options)


CUDA = Device(name="cuda", probe=probe, upload=upload)
