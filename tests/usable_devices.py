"""The devices a test runs on: each installed device plugin by name, skipped where it is not usable here (the CPU
always is; CUDA where a GPU and CuPy are, which CI lacks)."""

from __future__ import annotations

import pytest

from kinetic.contracts.device import Device
from kinetic.plugins import plugins

DEVICES = ("cpu", "cuda")


def device_or_skip(name: str) -> Device:
    device = plugins().devices.get(name)
    reason = device.probe() if device is not None else f"the {name} plugin is not installed"
    if reason is not None:
        pytest.skip(f"{name} is not usable here: {reason}")
    return device
