"""Choosing the device a model runs on: --device auto tries CUDA, then Vulkan, then the CPU."""

from __future__ import annotations

from typing import Callable

from kinetic.errors import KineticError
from kinetic.plugins import plugins
from kinetic.contracts import Device

AUTO_ORDER = ("cuda", "vulkan", "cpu")
TITLES = {"cuda": "CUDA", "vulkan": "Vulkan", "cpu": "the CPU"}


def choose_device(name: str, announce: Callable[[str], None]) -> Device:
    """The device named (or the first usable one for "auto"); an unusable named device is an error."""
    registered = plugins().devices
    if name != "auto":
        if name not in AUTO_ORDER:
            raise KineticError(f"unknown device {name!r}; use auto, cpu, cuda or vulkan")
        device = registered.get(name)
        if device is None:
            raise KineticError(f"{TITLES[name]} is not usable: no {name} device plugin is installed")
        reason = device.probe()
        if reason:
            raise KineticError(f"{TITLES[name]} is not usable: {reason}")
        return device
    reasons = []
    for candidate in AUTO_ORDER:
        device = registered.get(candidate)
        if device is None:
            continue
        reason = device.probe()
        if reason is None:
            if reasons:
                announce(f"kinetic: running on {TITLES[candidate]}; " + "; ".join(reasons))
            return device
        reasons.append(f"{TITLES[candidate]} is not usable: {reason}")
    raise KineticError("no device can run models: " + ("; ".join(reasons) or "no device plugin is installed")
                       + " (run kinetic doctor)")
