"""`kinetic doctor`: one screen on this computer, the plugins, and what to fix."""

from __future__ import annotations

from collections import Counter

from kinetic import __version__, system
from kinetic.contracts.device import Device
from kinetic.paths import models_dir
from kinetic.plugins import Plugins, plugins
from kinetic.stores import all_found
from kinetic.stores.described import describe
from kinetic.system import GIB

LOW_DISK = 10 * GIB
LOW_MEMORY = 2 * GIB


def doctor_lines() -> list[str]:
    loaded = plugins()
    cpu = system.cpu()
    total, available = system.memory()
    models, free = system.disk_free(models_dir())
    fixes: list[str] = []
    lines = [f"Kinetic {__version__}", row("system", system.os_description())]
    lines.append(row("cpu", cpu_line(cpu, fixes)))
    lines.append(row("memory", memory_line(total, available, cpu.threads, fixes)))
    lines += gpu_lines(loaded)
    lines += plugin_lines(loaded, fixes)
    lines.append(row("models", models_line()))
    lines.append(row("disk", f"{free / GIB:.1f} GiB free for {models}"))
    if free < LOW_DISK:
        fixes.append("under 10 GiB of disk is free where models are kept")
    lines += ["", "To fix:"] + [f"  - {fix}" for fix in fixes] if fixes else ["", "Nothing to fix."]
    return lines


def models_line() -> str:
    listed = [describe(found) for found in all_found()]
    runnable = sum(model.runnable for model in listed)
    return f"{len(listed)} found, {runnable} that Kinetic runs (`kinetic models` lists them)"


def row(label: str, text: str) -> str:
    return f"  {label:<9}{text}"


def cpu_line(cpu: system.Cpu, fixes: list[str]) -> str:
    flags = ", ".join(f"{name.upper()} {yes_no(value)}" for name, value in cpu.features.items())
    if cpu.features.get("avx2") is False:
        fixes.append("this CPU has no AVX2: models run on it, but slower")
    return f"{cpu.model}, {cpu.threads} threads, {flags}"


def yes_no(value) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def memory_line(total, available, threads: int, fixes: list[str]) -> str:
    if total is None:
        return "unknown"
    speed = system.memory_read_speed(threads)
    if available is not None and available < LOW_MEMORY:
        fixes.append("under 2 GiB of memory is available: close other programs or pick a smaller model")
    avail = f", {available / GIB:.1f} GiB available" if available is not None else ""
    return f"{total / GIB:.1f} GiB{avail}, reads at {speed / 1e9:.0f} GB/s (measured)"


def gpu_lines(loaded: Plugins) -> list[str]:
    """A line per GPU device plugin with what its probe says."""
    gpus = [device for device in loaded.devices if device.name != "cpu"]
    if not gpus:
        return [row("gpu", "none: no GPU device plugin is installed")]
    return [row("gpu", f"{device.name}: {device.probe() or usable_line(device)}") for device in gpus]


def usable_line(device: Device) -> str:
    """usable, with the free memory and nominal bandwidth where the device says them, and why --device auto passes
    over it where it does."""
    free, bandwidth = device.free_memory(), device.bandwidth()
    said = ([f"{free / GIB:.1f} GiB free"] if free is not None else []) + (
        [f"{bandwidth / 1e9:.0f} GB/s nominal"] if bandwidth is not None else [])
    passed_over = device.passed_over()
    return ", ".join(["usable", *said]) + (f" ({passed_over}; --device auto passes over it)" if passed_over else "")


def plugin_lines(loaded: Plugins, fixes: list[str]) -> list[str]:
    """Each loaded plugin with what it registered, then each one that failed."""
    registered = Counter()
    for kind, registry in registries(loaded):
        for item in registry:
            registered[(registry.owner(item), kind)] += 1
    lines = []
    for plugin in loaded.loaded:
        what = ", ".join(f"{n} {kind}" for (name, kind), n in registered.items() if name == plugin.name)
        lines.append(f"{plugin.name} ({plugin.distribution}): {what or 'registers nothing'}")
    for problem in loaded.problems:
        lines.append(f"{problem.plugin}: {problem.error}")
        fixes.append(f"plugin {problem.plugin!r}: {problem.error}; reinstall or remove it")
    labels = ["plugins"] + [""] * (len(lines) - 1)
    return [row(label, line) for label, line in zip(labels, lines)] or [row("plugins", "none loaded")]


def registries(loaded: Plugins):
    return [
        ("model formats", loaded.model_formats),
        ("tensor types", loaded.tensor_types),
        ("families", loaded.families),
        ("devices", loaded.devices),
        ("speed technologies", loaded.speed_technologies),
    ]
