"""Finding the GPU through Vulkan: whether a Vulkan loader is here at all, whether wgpu finds a Vulkan adapter
behind it, and the one wgpu device every runner of the process shares. wgpu is imported inside the functions."""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, Optional

# the adapters wgpu reports, best first; a CPU adapter is a software driver (Mesa's lavapipe)
PREFERRED = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU", "Unknown", "CPU")
LOADERS = ("libvulkan.so.1", "vulkan-1.dll")
GPU_NODES = ("/dev/dri/*", "/dev/nvidia[0-9]*", "/dev/dxg")
OPTIONAL_FEATURES = ("timestamp-query",)  # asked for where offered: scripts/profile_vulkan.py times dispatches


def loader_present() -> bool:
    """Whether the Vulkan loader library can be loaded (no driver is asked anything)."""
    for name in (ctypes.util.find_library("vulkan"), *LOADERS):
        try:
            if name:
                ctypes.CDLL(name)
                return True
        except OSError:
            continue
    return False


@dataclass(frozen=True)
class Gpu:
    """The wgpu device and what the adapter behind it says of itself."""

    device: Any  # wgpu.GPUDevice
    name: str  # "AMD Radeon RX 7600", "llvmpipe (LLVM 15.0.6, 256 bits)"
    driver: str  # the driver's own description: "Mesa 22.3.6 (LLVM 15.0.6)"
    software: bool  # a CPU adapter
    binding_limit: int  # the most bytes one shader binding may see


def _adapter() -> tuple[Any, Optional[str]]:
    """(the best Vulkan adapter, None) or (None, why there is none)."""
    try:
        importlib.import_module("wgpu")
    except ImportError as error:
        return None, f"wgpu is not installed ({error}); pip install 'kinetic-engine[vulkan]'"
    if not loader_present():
        return None, "no Vulkan loader (libvulkan) is installed; install your GPU's Vulkan driver"
    adapters = _vulkan_adapters()
    if not adapters:
        return None, "the Vulkan loader finds no GPU driver (no adapter)"
    rank = {kind: i for i, kind in enumerate(PREFERRED)}
    return min(adapters, key=lambda a: rank.get(a.info["adapter_type"], len(PREFERRED))), None


@lru_cache(maxsize=None)
def _vulkan_adapters() -> list:
    """Every adapter wgpu finds through Vulkan, asked once (wgpu's instance is made once per process)."""
    import wgpu
    from wgpu.backends.wgpu_native.extras import set_instance_extras

    set_instance_extras(backends=["Vulkan"])  # not OpenGL's adapters, which wgpu would also list
    with _quiet_stderr():
        adapters = wgpu.gpu.enumerate_adapters_sync()
    return [a for a in adapters if a.info["backend_type"] == "Vulkan"]


@contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Standard error closed for a moment: Mesa's window-system code prints about XDG_RUNTIME_DIR as the Vulkan
    instance starts, and computing needs no windows."""
    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def probe() -> Optional[str]:
    return _adapter()[1]


def software_adapter() -> Optional[str]:
    """Why --device auto passes over a usable adapter: it is a software driver, slower than the CPU device
    (an explicit --device vulkan still takes it); None for a GPU."""
    adapter = _adapter()[0]
    if adapter is not None and adapter.info["adapter_type"] == "CPU":
        return f"a software adapter, {adapter.info['device']}"
    return None


def gpu_present() -> bool:
    """Whether a GPU (not a software driver) answers through Vulkan: only then does --device auto try it. Without a
    GPU's device node no driver is asked: asking loads every installed driver (Mesa's pull in LLVM, some 60 MB)."""
    return gpu_nodes() and loader_present() and _adapter()[0] is not None and software_adapter() is None


def gpu_nodes() -> bool:
    """Whether a GPU's device node is here (Linux: a DRM node, NVIDIA's, or WSL's /dev/dxg); True elsewhere."""
    if not sys.platform.startswith("linux"):
        return True
    return any(glob.glob(pattern) for pattern in GPU_NODES)


@lru_cache(maxsize=None)
def gpu() -> Gpu:
    """The shared device on the best adapter, with the adapter's largest bindings (call only when probe() finds it
    usable)."""
    adapter = _adapter()[0]
    limits = {name: adapter.limits[name] for name in ("max-storage-buffer-binding-size", "max-buffer-size",
                                                         "max-compute-workgroup-storage-size")}
    features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    info = adapter.info
    binding = min(limits["max-storage-buffer-binding-size"], limits["max-buffer-size"])
    return Gpu(device, info["device"], info["description"], info["adapter_type"] == "CPU", binding // 4 * 4)
