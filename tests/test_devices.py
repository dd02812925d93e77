"""Choosing the device (kinetic.engine.devices): --device auto by priority, the one line naming what it passed
over, the names --device takes, and a third-party device plugin chosen by name from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from dataclasses import dataclass, replace
from typing import Optional

import pytest
from installed_plugins import install_distribution

from kinetic.contracts.device import Device, UploadOptions, UploadRefused
import kinetic.engine.devices as devices_module
from kinetic.engine.devices import open_runner
from kinetic.errors import KineticError
from kinetic.hookspecs import hookimpl
from kinetic.plugins import load_plugins
from kinetic.testing.gguf_factory import Dims, write_random_model

STACK = object()  # the fake devices never look at the stack
OPTIONS = UploadOptions(context_length=4096)


@dataclass
class FakeRunner:
    device_name: str
    context_length: int
    context_note: Optional[str] = None
    compile_seconds: float = 0.0


def fake_device(name: str, title: str, priority: int, reason: Optional[str] = None, refusal: Optional[str] = None,
                present: bool = True, fits: Optional[int] = None) -> Device:
    """A device whose probe gives `reason`, whose upload refuses with `refusal`, and whose runner shrinks the
    context to `fits`."""

    def upload(stack, options):
        if refusal:
            raise UploadRefused(title, refusal)
        context = min(options.context_length, fits or options.context_length)
        return FakeRunner(title, context, f"to fit {title}" if fits else None)

    return Device(name=name, title=title, priority=priority, probe=lambda: reason, upload=upload,
                  present=lambda: present)


def use_devices(monkeypatch, *devices: Device) -> None:
    """Make the devices the registered ones, through an in-process plugin."""
    module = types.ModuleType("fake_devices")
    module.register_devices = hookimpl(lambda register: [register(device) for device in devices])
    registered = load_plugins(extra=[("fake_devices", module)], use_entry_points=False)
    assert registered.problems == []
    monkeypatch.setattr(devices_module, "plugins", lambda: registered)


def choose(name: str, wants_gpu: bool = False) -> tuple[str, list[str]]:
    """(the chosen device's name, the lines announced)."""
    lines: list[str] = []
    device, _ = open_runner(STACK, name, OPTIONS, lines.append, wants_gpu)
    return device.name, lines


CPU = fake_device("cpu", "the CPU", 0)
CUDA_WITHOUT_CUPY = fake_device("cuda", "CUDA", 20, reason="CuPy is not installed")


def test_auto_tries_devices_by_priority_not_by_registration(monkeypatch):
    use_devices(monkeypatch, CPU, fake_device("npu", "the NPU", 5), fake_device("cuda", "CUDA", 20))
    assert choose("auto") == ("cuda", [])
    use_devices(monkeypatch, CPU, fake_device("npu", "the NPU", 5))
    assert choose("auto") == ("npu", [])


def test_auto_names_each_present_device_it_passed_over_on_one_line(monkeypatch):
    vulkan = fake_device("vulkan", "Vulkan", 10, reason="no Vulkan driver")
    use_devices(monkeypatch, CPU, CUDA_WITHOUT_CUPY, vulkan)
    assert choose("auto") == ("cpu", ["kinetic: running on the CPU; CUDA is not usable: CuPy is not installed; "
                                      "Vulkan is not usable: no Vulkan driver"])


def test_auto_passes_over_a_device_whose_hardware_is_absent_silently_and_unprobed(monkeypatch):
    def probe():
        raise AssertionError("auto probed a device whose hardware is absent")

    use_devices(monkeypatch, CPU, replace(fake_device("cuda", "CUDA", 20, present=False), probe=probe))
    assert choose("auto") == ("cpu", [])


@pytest.mark.parametrize("devices, line", [
    ((CPU, fake_device("cuda", "CUDA", 20, reason="no NVIDIA driver", present=False)),
     "kinetic: no usable GPU for --gpu-layers, running on the CPU; CUDA is not usable: no NVIDIA driver"),
    ((CPU, CUDA_WITHOUT_CUPY), "kinetic: no usable GPU for --gpu-layers, running on the CPU; CUDA is not usable: "
                               "CuPy is not installed"),
    ((CPU,), "kinetic: no usable GPU for --gpu-layers, running on the CPU"),
])
def test_gpu_layers_without_a_usable_gpu_run_on_the_cpu_saying_so(monkeypatch, devices, line):
    """-ngl 99 on a laptop without a GPU runs, as llama.cpp does, with one line even when no GPU is present."""
    use_devices(monkeypatch, *devices)
    assert choose("auto", wants_gpu=True) == ("cpu", [line])


def test_gpu_layers_take_a_usable_gpu_and_never_override_a_named_device(monkeypatch):
    use_devices(monkeypatch, CPU, fake_device("cuda", "CUDA", 20))
    assert choose("auto", wants_gpu=True) == ("cuda", [])
    use_devices(monkeypatch, CPU, CUDA_WITHOUT_CUPY)
    with pytest.raises(KineticError, match=r"^CUDA is not usable: CuPy is not installed$"):
        choose("cuda", wants_gpu=True)


def test_auto_runs_on_the_next_device_a_model_the_first_refuses(monkeypatch):
    """The reference docs' promise: a model a GPU cannot run (a weight type it lacks, too large) runs on the
    CPU, with the reason on one line. Named, the refusing device is a failure naming the reason."""
    refusing = fake_device("cuda", "CUDA", 20, refusal="CUDA has no kernel for Q2_K weights (blk.1.ffn_up.weight)")
    use_devices(monkeypatch, CPU, refusing)
    assert choose("auto") == ("cpu", ["kinetic: running on the CPU; CUDA is not usable: "
                                      "CUDA has no kernel for Q2_K weights (blk.1.ffn_up.weight)"])
    with pytest.raises(KineticError, match=r"^CUDA cannot run this model: CUDA has no kernel for Q2_K weights"):
        choose("cuda")


def test_a_named_device_that_is_not_usable_is_a_failure_naming_why(monkeypatch):
    use_devices(monkeypatch, CPU, CUDA_WITHOUT_CUPY)
    with pytest.raises(KineticError, match=r"^CUDA is not usable: CuPy is not installed$"):
        choose("cuda")


def test_no_usable_device_is_a_failure_naming_every_reason(monkeypatch):
    use_devices(monkeypatch, fake_device("cpu", "the CPU", 0, reason="numba is not installed"), CUDA_WITHOUT_CUPY)
    with pytest.raises(KineticError, match=r"^no device can run this model: CUDA is not usable: CuPy is not installed; "
                                           r"the CPU is not usable: numba is not installed \(run kinetic doctor\)$"):
        choose("auto")


def test_device_names_as_llama_cpp_spells_them(monkeypatch):
    """none is the CPU (llama.cpp's -dev none), NAME0 is NAME (cuda0, CUDA0); a registered name ending in a
    digit is itself; a later GPU of a kind is refused with what to use."""
    use_devices(monkeypatch, CPU, fake_device("cuda", "CUDA", 20), fake_device("npu2", "the NPU", 5))
    assert [choose(name)[0] for name in ("none", "cpu", "cuda0", "CUDA0", "Cuda", "npu2")] == \
        ["cpu", "cpu", "cuda", "cuda", "cuda", "npu2"]
    with pytest.raises(KineticError, match=r"^--device cuda1: Kinetic uses the first GPU of each kind; "
                                           r"use cuda or cuda0$"):
        choose("cuda1")


def test_an_unknown_device_name_lists_the_installed_ones(monkeypatch):
    use_devices(monkeypatch, CPU, fake_device("cuda", "CUDA", 20))
    with pytest.raises(KineticError, match=r"^no device 'vulkan' is installed; use auto, none or one of: cuda, cpu "
                                           r"\(see kinetic doctor\)$"):
        choose("vulkan")


def test_a_third_party_device_is_chosen_by_name(monkeypatch):
    use_devices(monkeypatch, CPU, fake_device("abacus", "the abacus", -1))
    assert choose("auto") == ("cpu", [])
    assert choose("abacus") == ("abacus", [])
    assert choose("abacus0") == ("abacus", [])


def test_the_device_says_why_the_context_shrank(monkeypatch):
    use_devices(monkeypatch, fake_device("small", "the small device", 0, fits=2048))
    assert choose("small") == ("small", ["context 2k to fit the small device; -c to change"])


# --- a third-party device plugin, installed as pip installs it, chosen with --device ---

ABACUS_PLUGIN = """
    from kinetic.contracts import Device
    from kinetic.hookspecs import hookimpl
    from kinetic_cpu.device import CPU


    class AbacusRunner:
        \"\"\"The CPU's runner under another name; it halves the context unless -c chose it.\"\"\"

        device_name = "the abacus"
        context_note = "to fit the abacus"

        def __init__(self, stack, options):
            cpu = CPU.upload(stack, options)
            self.context_length = cpu.context_length if options.context_given else cpu.context_length // 2
            self.new_sequence, self.forward, self.load = cpu.new_sequence, cpu.forward, cpu.load
            self.cache_types = cpu.cache_types
            self.cpu = cpu

        @property
        def compile_seconds(self):
            return self.cpu.compile_seconds


    ABACUS = Device(name="abacus", title="the abacus", priority=-1, probe=lambda: None, upload=AbacusRunner)


    @hookimpl
    def register_devices(register):
        register(ABACUS)
"""


def test_a_device_plugin_runs_a_model_chosen_with_device(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install_distribution(site, "kinetic-abacus", "kinetic_abacus", ABACUS_PLUGIN)
    model = write_random_model(tmp_path / "m.gguf", "llama", Dims(n_embd=64, n_head=4, n_head_kv=2, n_ff=128),
                               metadata={"llama.context_length": 4096})
    template = tmp_path / "plain.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "kinetic", "run", str(model), "Hello", "--device", "abacus",
                             "-n", "3", "--temp", "0", "--chat-template-file", str(template), "--off", "warm-start"],
                            capture_output=True, text=True, env=environment)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "context 2k to fit the abacus; -c to change"
    assert lines[-1].startswith("[3 tokens at ") and lines[-1].endswith(" on the abacus]")
