"""The Vulkan device: the best GPU the Vulkan loader finds, through wgpu (adapter.py says when it is usable). Under
--device auto it comes after CUDA and before the CPU, and passes over a software adapter."""

from __future__ import annotations

from kinetic.contracts import Device
from kinetic.contracts.blocks import Stack
from kinetic.contracts.device import UploadOptions, UploadRefused
from kinetic_vulkan.adapter import gpu, gpu_present, probe, software_adapter
from kinetic_vulkan.support import TITLE, refusal

PRIORITY = 10  # below CUDA's 20 (an NVIDIA GPU takes CUDA), above the CPU's 0


def upload(stack: Stack, options: UploadOptions):
    reason = refusal(stack) or probe()
    if reason:
        raise UploadRefused(TITLE, reason)
    from kinetic_vulkan.runner import VulkanRunner

    return VulkanRunner(stack, options, gpu())


VULKAN = Device(name="vulkan", title=TITLE, priority=PRIORITY, probe=probe, upload=upload, present=gpu_present,
                passed_over=software_adapter)
