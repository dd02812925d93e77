"""The memory a pulled model will run in: the free memory of the GPU Kinetic would use, else half the RAM
that is free (the rest stays for the system and other programs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kinetic import system
from kinetic.contracts.device import Device
from kinetic.engine.devices import by_priority
from kinetic.plugins import plugins


@dataclass(frozen=True)
class Budget:
    bytes: int
    where: str  # as "{GiB} GiB {where}" reads: "free on CUDA", "(half the free RAM)"


def memory_budget() -> Budget:
    gpu = usable_gpu()
    if gpu is not None:
        device, free = gpu
        return Budget(free, f"free on {device.title}")
    _, available = system.memory()
    return Budget((available or 0) // 2, "(half the free RAM)")


def usable_gpu() -> Optional[tuple[Device, int]]:
    """The GPU device Kinetic would use first and its free bytes; None without one that says how much."""
    for device in by_priority(plugins().devices):
        if device.name == "cpu" or not device.present() or device.probe() is not None:
            continue
        free = device.free_memory()
        if free is not None:
            return device, free
    return None
