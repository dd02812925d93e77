"""The CUDA device: the first NVIDIA GPU, through CuPy (gpu.py says when it is usable). Under --device auto
it comes before the CPU."""

from __future__ import annotations

from kinetic.contracts import Device
from kinetic.contracts.blocks import Stack
from kinetic.contracts.device import UploadOptions, UploadRefused
from kinetic_cuda.gpu import bandwidth, cap_memory, driver_present, free_memory, probe
from kinetic_cuda.support import TITLE, refusal

PRIORITY = 20  # above Vulkan's 10 (an NVIDIA GPU takes CUDA, as the reference docs say) and the CPU's 0


def upload(stack: Stack, options: UploadOptions):
    reason = refusal(stack) or probe()
    if reason:
        raise UploadRefused(TITLE, reason)
    from kinetic_cuda.runner import CudaRunner

    import cupy

    if options.gpu_memory is not None:
        cap_memory(options.gpu_memory)
    try:
        return CudaRunner(stack, options)
    except cupy.cuda.memory.OutOfMemoryError as error:  # what the fit did not count (kernels, small buffers)
        raise UploadRefused(TITLE, f"the GPU ran out of memory while loading ({error}); give a smaller -c, or "
                                   "more --gpu-memory") from None


CUDA = Device(name="cuda", title=TITLE, priority=PRIORITY, probe=probe, upload=upload, present=driver_present,
              free_memory=free_memory, bandwidth=bandwidth)
