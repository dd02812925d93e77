"""Finding plugins (entry-point group "kinetic"), loading them, and filling the registries.

A plugin that fails to import, or whose hook fails or registers a duplicate, is recorded as a
problem (shown by `kinetic doctor`) and never breaks the CLI. KINETIC_PLUGINS, a comma list of
entry-point names, restricts what loads.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterable, Optional

import importlib_metadata
import pluggy

from kinetic import hookspecs
from kinetic.contracts import Device, Family, ModelFormat, SpeedTechnology, TensorType
from kinetic.errors import PluginError
from kinetic.registry import Registry

ENTRY_POINT_GROUP = "kinetic"
BUILTIN_DISTRIBUTIONS = ("kinetic-formats", "kinetic-families", "kinetic-cpu", "kinetic-cuda", "kinetic-vulkan",
                         "kinetic-speed")


@dataclass(frozen=True)
class PluginInfo:
    name: str
    distribution: str  # "kinetic-formats 0.1.0", or "(in process)"


@dataclass(frozen=True)
class PluginProblem:
    plugin: str
    error: str


@dataclass
class Plugins:
    """Everything the loaded plugins registered, and what went wrong."""

    manager: pluggy.PluginManager
    loaded: list[PluginInfo] = field(default_factory=list)
    problems: list[PluginProblem] = field(default_factory=list)
    model_formats: Registry[ModelFormat] = field(default_factory=lambda: Registry("model format", lambda f: [f.name]))
    tensor_types: Registry[TensorType] = field(default_factory=lambda: Registry("tensor type", lambda t: [t.id, t.name]))
    families: Registry[Family] = field(default_factory=lambda: Registry("architecture", lambda f: f.architectures))
    devices: Registry[Device] = field(default_factory=lambda: Registry("device", lambda d: [d.name]))
    speed_technologies: Registry[SpeedTechnology] = field(
        default_factory=lambda: Registry("speed technology", lambda s: [s.name])
    )


def allowed_names() -> Optional[set[str]]:
    """The KINETIC_PLUGINS allow-list, or None when every plugin may load."""
    value = os.environ.get("KINETIC_PLUGINS")
    if value is None:
        return None
    return {name.strip() for name in value.split(",") if name.strip()}


def _entry_points(allowed: Optional[set[str]]) -> list[importlib_metadata.EntryPoint]:
    found = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
    chosen = [ep for ep in found if allowed is None or ep.name in allowed]
    # Built-in plugins register first, so a third party repeating a name is the one refused.
    return sorted(chosen, key=lambda ep: (_distribution_name(ep) not in BUILTIN_DISTRIBUTIONS, ep.name))


def _distribution_name(ep: importlib_metadata.EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else ""


def _import(ep: importlib_metadata.EntryPoint, plugins: Plugins) -> None:
    try:
        module = ep.load()
        plugins.manager.register(module, name=ep.name)
    except Exception as error:  # a broken plugin is reported, never fatal
        plugins.problems.append(PluginProblem(ep.name, f"failed to load: {type(error).__name__}: {error}"))
        return
    dist = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "(unknown distribution)"
    plugins.loaded.append(PluginInfo(ep.name, dist))


def _collect(plugins: Plugins, hook_name: str, registry: Registry) -> None:
    """Call one registration hook plugin by plugin, so every item is traced to its plugin."""
    for impl in getattr(plugins.manager.hook, hook_name).get_hookimpls():
        def register(item, _plugin=impl.plugin_name):
            registry.add(item, _plugin)

        try:
            impl.function(register=register)
        except PluginError as error:
            plugins.problems.append(PluginProblem(impl.plugin_name, str(error)))
        except Exception as error:
            plugins.problems.append(PluginProblem(impl.plugin_name, f"{hook_name} failed: {type(error).__name__}: {error}"))


def load_plugins(extra: Iterable[tuple[str, ModuleType]] = (), use_entry_points: bool = True) -> Plugins:
    """Load the installed plugins (and any given in-process ones) and fill the registries."""
    manager = pluggy.PluginManager("kinetic")
    manager.add_hookspecs(hookspecs)
    plugins = Plugins(manager)
    if use_entry_points:
        for ep in _entry_points(allowed_names()):
            _import(ep, plugins)
    for name, module in extra:
        manager.register(module, name=name)
        plugins.loaded.append(PluginInfo(name, "(in process)"))
    _collect(plugins, "register_model_formats", plugins.model_formats)
    _collect(plugins, "register_tensor_types", plugins.tensor_types)
    _collect(plugins, "register_families", plugins.families)
    _collect(plugins, "register_devices", plugins.devices)
    _collect(plugins, "register_speed_technologies", plugins.speed_technologies)
    return plugins


@functools.lru_cache(maxsize=None)
def plugins() -> Plugins:
    """The process-wide plugins, loaded once."""
    return load_plugins()
