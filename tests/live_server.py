"""`kinetic serve` as a user starts it, for the tests that use it through real client libraries."""

from __future__ import annotations

import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def serving(gguf: Path, states: Path, alias: str = "coder") -> Iterator[tuple[subprocess.Popen, str]]:
    """(process, base URL) of `kinetic serve` on a free port; its Warm Start folder is states, so its first
    request starts cold. The caller stops it (Ctrl+C) or it is killed at the end."""
    proc = subprocess.Popen([sys.executable, "-m", "kinetic", "serve", str(gguf), "--port", "0", "-c", "1024",
                             "--device", "cpu", "-a", alias, "--metrics", "--cache-dir", str(states)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    match = re.fullmatch(rf"Serving {alias} on the CPU at (http://127\.0\.0\.1:\d+/v1)", line)
    if not match:
        proc.kill()
        pytest.fail(f"kinetic serve did not start: {line!r} {proc.stderr.read()}")
    speed = proc.stdout.readline().strip()
    assert speed == "Speed technologies on: RAD-1, Warm Start, Zero Wait, Convoy; off: none", speed
    try:
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()
