"""`kinetic doctor`: the system, CPU, memory, plugin and disk lines."""

from __future__ import annotations

import re
import subprocess
import sys


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
    assert re.search(r"^  [ a-z]{9}formats \(kinetic-formats 0\.1\.0\): 1 model formats, \d+ tensor types$",
                     result.stdout, re.M)
    assert re.search(r"^  [ a-z]{9}families \(kinetic-families 0\.1\.0\): 4 families$", result.stdout, re.M)
    assert re.search(r"^  [ a-z]{9}cpu \(kinetic-cpu 0\.1\.0\): 1 devices$", result.stdout, re.M)
    assert re.search(r"^  models   \d+ found, \d+ that Kinetic runs \(`kinetic models` lists them\)$", result.stdout, re.M)
    assert re.search(r"^  disk     [\d.]+ GiB free for .+$", result.stdout, re.M)
    assert lines[-1] == "Nothing to fix." or "To fix:" in lines
