"""Choosing the device a model runs on, and uploading the model there.

--device takes a registered device's name, `none` for the CPU (llama.cpp's -dev none) or a name with an index
(llama.cpp's cuda0). `auto` tries the registered devices from the highest priority down and keeps the first
that is usable and accepts the model, saying in one line why it passed over any device whose hardware is here.
"""

from __future__ import annotations

import re
from typing import Callable, Union

from kinetic.contracts.blocks import Stack
from kinetic.contracts.device import Device, Runner, UploadOptions, UploadRefused
from kinetic.errors import KineticError
from kinetic.plugins import plugins
from kinetic.registry import Registry

AUTO = "auto"
ALIASES = {"none": "cpu"}  # llama.cpp's -dev none: no GPU
INDEXED = re.compile(r"(?P<name>.+?)(?P<index>\d+)")  # cuda0, vulkan0: llama.cpp numbers each kind's GPUs


def open_runner(stack: Stack, name: str, options: UploadOptions,
                announce: Callable[[str], None], wants_gpu: bool = False) -> tuple[Device, Runner]:
    """The device --device names and the stack uploaded to it; an unusable or refusing named device is an
    error. For auto, the first device by priority that runs the stack; with wants_gpu (--gpu-layers, -ngl N),
    landing on the CPU is always said, as llama.cpp says it ignores -ngl without a usable GPU. Says why the
    context shrank, if it did."""
    if name == AUTO:
        device, runner = _first_that_runs(stack, options, announce, wants_gpu)
    else:
        device = device_named(name, plugins().devices)
        reason = device.probe()
        if reason:
            raise KineticError(f"{device.title} is not usable: {reason}")
        runner = device.upload(stack, options)
    if options.context_length and runner.context_length < options.context_length:
        announce(f"context {runner.context_length // 1024}k {runner.context_note}; -c to change")
    return device, runner


def device_named(name: str, registered: Registry[Device]) -> Device:
    """The registered device --device NAME means (any case): NAME, the CPU for none, NAME for NAME0."""
    wanted = ALIASES.get(name.lower(), name.lower())
    indexed = INDEXED.fullmatch(wanted)
    if wanted not in registered and indexed and indexed["name"] in registered:
        if int(indexed["index"]) != 0:
            raise KineticError(f"--device {name}: Kinetic uses the first GPU of each kind; "
                               f"use {indexed['name']} or {indexed['name']}0")
        wanted = indexed["name"]
    device = registered.get(wanted)
    if device is None:
        names = ", ".join(d.name for d in by_priority(registered))
        raise KineticError(f"no device {name!r} is installed; use auto, none or one of: {names} (see kinetic doctor)")
    return device


def by_priority(registered: Registry[Device]) -> list[Device]:
    """The order --device auto tries devices in: highest priority first, then by name."""
    return sorted(registered, key=lambda device: (-device.priority, device.name))


def _first_that_runs(stack: Stack, options: UploadOptions, announce: Callable[[str], None],
                     wants_gpu: bool) -> tuple[Device, Runner]:
    passed_over: list[tuple[Device, str]] = []
    for device in by_priority(plugins().devices):
        if not wants_gpu and not device.present():
            continue  # its hardware is absent: passed over silently, and unprobed (a probe may load drivers)
        runner = _runner_or_reason(device, stack, options)
        if isinstance(runner, str):
            passed_over.append((device, runner))
            continue
        insisted = wants_gpu and device.name == "cpu"
        reasons = [_not_usable(skipped, reason) for skipped, reason in passed_over if insisted or skipped.present()]
        if insisted:
            announce("kinetic: no usable GPU for --gpu-layers, running on the CPU"
                     + "".join(f"; {reason}" for reason in reasons))
        elif reasons:
            announce(f"kinetic: running on {device.title}; " + "; ".join(reasons))
        return device, runner
    reasons = "; ".join(_not_usable(device, reason) for device, reason in passed_over)
    raise KineticError(f"no device can run this model: {reasons or 'no device plugin is installed'} "
                       "(run kinetic doctor)")


def _runner_or_reason(device: Device, stack: Stack, options: UploadOptions) -> Union[Runner, str]:
    """The stack uploaded to device, or the one-line reason --device auto cannot run it there."""
    reason = device.probe() or device.passed_over()
    if reason:
        return reason
    try:
        return device.upload(stack, options)
    except UploadRefused as refusal:
        return refusal.reason


def _not_usable(device: Device, reason: str) -> str:
    return f"{device.title} is not usable: {reason}"
