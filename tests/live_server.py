"""`kinetic serve` as a user starts it, for the tests that use it through real client libraries; conftest.py
loads this module as a pytest plugin, so its fixtures serve every test module (one server per module)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest


@contextmanager
def sigint_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile: a process started then inherits that, as a job a script starts in the
    background (`kinetic serve ... &`) does."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def serving(gguf: Path, states: Path, alias: str = "coder") -> Iterator[tuple[subprocess.Popen, str]]:
    """(process, base URL) of `kinetic serve` on a free port; its Warm Start folder is states, so its first
    request starts cold. It starts with SIGINT ignored, as in the background of a script (CI's), where Ctrl+C
    must stop it all the same. The caller stops it (Ctrl+C) or it is killed at the end."""
    with sigint_ignored():
        proc = subprocess.Popen([sys.executable, "-m", "kinetic", "serve", str(gguf), "--port", "0", "-c", "1024",
                                 "--device", "cpu", "-a", alias, "--metrics", "--cache-dir", str(states)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    match = re.fullmatch(rf"Serving {alias} on the CPU at (http://127\.0\.0\.1:\d+/v1)", line)
    if not match:
        proc.kill()
        pytest.fail(f"kinetic serve did not start: {line!r} {proc.stderr.read()}")
    speed = proc.stdout.readline().strip()
    assert speed == "Speed technologies on: RAD-1, Warm Start, Zero Wait, Shortlist, Torque, Convoy; off: none", speed
    try:
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.fixture(scope="module")
def live_server(qwen_gguf, tmp_path_factory) -> Iterator[tuple[subprocess.Popen, str]]:
    """(process, base URL) of `kinetic serve` on the real Qwen, one per test module."""
    with serving(qwen_gguf, tmp_path_factory.mktemp("live-states")) as started:
        yield started


@pytest.fixture(scope="module")
def base_url(live_server) -> str:
    return live_server[1]


@pytest.fixture(scope="module")
def openai_client(base_url):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=base_url, api_key="local", max_retries=0, timeout=120)
