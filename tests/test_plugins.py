"""The plugin system: built-ins through entry points, third parties picked up, broken ones reported."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import numpy as np
import pytest
from installed_plugins import install_distribution

from kinetic.contracts import Family, TensorType
from kinetic.hookspecs import hookimpl
from kinetic.plugins import BUILTIN_DISTRIBUTIONS, load_plugins
from kinetic.testing.gguf_factory import write_gguf


def throwaway_plugin(**hooks) -> types.ModuleType:
    """A plugin module made in the test: each keyword is a hook name -> the items it registers."""
    module = types.ModuleType("throwaway")
    for hook_name, items in hooks.items():
        def hook(register, _items=items):
            for item in _items:
                register(item)

        hook.__name__ = hook_name
        setattr(module, hook_name, hookimpl(hook))
    return module


def test_builtin_formats_plugin_loads_through_its_entry_point():
    plugins = load_plugins()
    assert "formats" in [p.name for p in plugins.loaded]
    assert plugins.problems == []
    assert plugins.model_formats.owner(plugins.model_formats["gguf"]) == "formats"
    assert plugins.tensor_types["Q4_K"] is plugins.tensor_types[12]


def test_builtin_distributions_are_the_workspace_plugins():
    """The distributions that register first are exactly those under kinetic-plugins/, none more or fewer."""
    workspace = Path(__file__).parents[1] / "kinetic-plugins"
    names = {tomllib.loads(p.read_text())["project"]["name"] for p in workspace.glob("*/pyproject.toml")}
    assert names  # the workspace is there to compare with
    assert sorted(BUILTIN_DISTRIBUTIONS) == sorted(names)


def test_every_distribution_has_kinetics_one_version():
    """kinetic.__version__ is the version of every distribution and of every pin of one by another
    (scripts/release.py --set-version moves them together)."""
    import kinetic

    root = Path(__file__).parents[1]
    folders = [root, root / "kinetic-core", root / "llama-cpp-kinetic", root / "examples" / "kinetic-family-example",
               *(root / "kinetic-plugins").iterdir()]
    for folder in folders:
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
        pins = [need for needs in [project["dependencies"], *project.get("optional-dependencies", {}).values()]
                for need in needs if need.startswith(("kinetic", "llama-cpp-kinetic"))]
        assert project["version"] == kinetic.__version__, folder
        assert all(need.endswith(f"=={kinetic.__version__}") for need in pins), (folder, pins)


def test_in_process_plugin_registers_a_family():
    toy = Family(name="toy", architectures=("toyarch", "toyarch2"), build=lambda loader: None)
    plugins = load_plugins(extra=[("toy", throwaway_plugin(register_families=[toy]))], use_entry_points=False)
    assert plugins.families["toyarch2"] is toy
    assert plugins.families.owner(toy) == "toy"


def test_duplicate_is_refused_naming_both_plugins():
    clash = TensorType(id=12, name="MY_Q4", block_size=32, type_size=18, dequantize=lambda b: np.zeros(0))
    plugins = load_plugins(extra=[("clashing", throwaway_plugin(register_tensor_types=[clash]))])
    assert plugins.tensor_types[12].name == "Q4_K"
    (problem,) = plugins.problems
    assert problem.plugin == "clashing"
    assert "tensor type 12 from plugin 'clashing' is already registered by plugin 'formats'" in problem.error


def test_hook_that_raises_is_recorded_not_fatal():
    module = types.ModuleType("exploding")

    @hookimpl
    def register_devices(register):
        raise RuntimeError("no such hardware")

    module.register_devices = register_devices
    plugins = load_plugins(extra=[("exploding", module)], use_entry_points=False)
    assert [(p.plugin, p.error) for p in plugins.problems] == [
        ("exploding", "register_devices failed: RuntimeError: no such hardware")]


# --- third-party distributions, installed the way pip installs them: a module and its dist-info ---

FAMILY_PLUGIN = """
    from kinetic.hookspecs import hookimpl
    from kinetic.contracts import Family

    @hookimpl
    def register_families(register):
        register(Family(name="foo", architectures=("foo",), build=lambda loader: None))
"""


@pytest.fixture()
def site(tmp_path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install_distribution(site, "kinetic-family-foo", "kinetic_family_foo", FAMILY_PLUGIN)
    install_distribution(site, "kinetic-broken", "kinetic_broken", "raise ImportError('needs libfoo.so')\n")
    return site


def kinetic(site: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(site), **env}
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, env=environment)


def test_third_party_distribution_is_picked_up_and_broken_one_reported(site, tmp_path):
    doctor = kinetic(site, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert "family_foo (kinetic-family-foo 0.1.0): 1 families" in doctor.stdout
    assert "broken: failed to load: ImportError: needs libfoo.so" in doctor.stdout
    assert "  - plugin 'broken': failed to load: ImportError: needs libfoo.so; reinstall or remove it" in doctor.stdout

    info = kinetic(site, "info", str(write_gguf(tmp_path / "foo.gguf", "foo", {}, {})))
    assert info.returncode == 0, info.stderr
    assert "  architecture   foo (supported)" in info.stdout.splitlines()


def test_kinetic_plugins_restricts_what_loads(site, tmp_path):
    doctor = kinetic(site, "doctor", KINETIC_PLUGINS="formats")
    assert doctor.returncode == 0, doctor.stderr
    assert "formats (kinetic-formats" in doctor.stdout
    assert "family_foo" not in doctor.stdout
    assert "broken" not in doctor.stdout
    info = kinetic(site, "info", str(write_gguf(tmp_path / "foo.gguf", "foo", {}, {})), KINETIC_PLUGINS="formats")
    assert "  architecture   foo (not supported yet)" in info.stdout.splitlines()
