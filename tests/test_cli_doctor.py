"""`kinetic doctor`: the system, CPU, memory, plugin and disk lines."""

from __future__ import annotations

import re
import subprocess
import sys

from kinetic_families.plugin import FAMILIES


def test_doctor_reports_this_computer():
    result = subprocess.run([sys.executable, "-m", "kinetic", "doctor"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Kinetic ")
    labels = [line[2:11].strip() for line in lines[1:] if line.startswith("  ") and line[2:11].strip()]
    assert labels[:4] == ["system", "cpu", "memory", "gpu"] and "plugins" in labels and "disk" in labels
    assert re.search(r"^  cpu      .+, \d+ threads, AVX2 (yes|no|unknown), FMA (yes|no|unknown), F16C (yes|no|unknown)$",
                     result.stdout, re.M)
    assert re.search(r"^  memory   [\d.]+ GiB, [\d.]+ GiB available, reads at \d+ GB/s \(measured\)$", result.stdout, re.M)
    assert re.search(r"^  [ a-z]{9}formats \(kinetic-formats 0\.1\.0\): 2 model formats, \d+ tensor types$",
                     result.stdout, re.M)
    assert re.search(rf"^  [ a-z]{{9}}families \(kinetic-families 0\.1\.0\): {len(FAMILIES)} families$", result.stdout,
                     re.M)
    assert re.search(r"^  [ a-z]{9}cpu \(kinetic-cpu 0\.1\.0\): 1 devices$", result.stdout, re.M)
    assert re.search(r"^  models   \d+ found, \d+ that Kinetic runs \(`kinetic models` lists them\)$", result.stdout, re.M)
    assert re.search(r"^  disk     [\d.]+ GiB free for .+$", result.stdout, re.M)
    assert lines[-1] == "Nothing to fix." or "To fix:" in lines


def test_a_usable_gpu_says_its_free_memory_and_bandwidth_where_it_can():
    from kinetic.cli.doctor import usable_line
    from kinetic.contracts.device import Device

    gpu = Device("cuda", "CUDA", 20, probe=lambda: None, upload=None, free_memory=lambda: 5 << 30,
                 bandwidth=lambda: 336e9)
    assert usable_line(gpu) == "usable, 5.0 GiB free, 336 GB/s nominal"
    assert usable_line(Device("gpu", "A GPU", 10, probe=lambda: None, upload=None)) == "usable"
