"""Facts about this computer for `kinetic doctor`: OS, CPU features, memory and its read speed, disk."""

from __future__ import annotations

import os
import platform
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

GIB = 1 << 30
CPU_FEATURES = ("avx2", "fma", "f16c")


@dataclass(frozen=True)
class Cpu:
    model: str
    threads: int
    features: dict[str, Optional[bool]]  # None: this system does not say


def os_description() -> str:
    """e.g. 'Linux 6.1.0-18-amd64 (Debian GNU/Linux 12 (bookworm)), x86_64'."""
    system, release, machine = platform.system(), platform.release(), platform.machine()
    pretty = _os_release().get("PRETTY_NAME")
    return f"{system} {release}" + (f" ({pretty})" if pretty else "") + f", {machine}"


def _os_release() -> dict[str, str]:
    try:
        lines = Path("/etc/os-release").read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split("=", 1) for line in lines if "=" in line)
    return {key: value.strip().strip('"') for key, value in pairs}


def cpu() -> Cpu:
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    features = {name: (name in flags) if flags else None for name in CPU_FEATURES}
    model = info.get("model name") or platform.processor() or platform.machine()
    return Cpu(model=model, threads=os.cpu_count() or 1, features=features)


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    first = text.split("\n\n", 1)[0]
    pairs = (line.split(":", 1) for line in first.splitlines() if ":" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def memory() -> tuple[Optional[int], Optional[int]]:
    """(total, available) bytes of RAM, or None where unknown."""
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return None, None
    values = {}
    for line in lines:
        key, _, rest = line.partition(":")
        values[key] = int(rest.split()[0]) * 1024 if rest.split() else None
    return values.get("MemTotal"), values.get("MemAvailable")


def memory_read_speed(threads: int, mib_per_thread: int = 128, repeats: int = 3) -> float:
    """Bytes per second that `threads` threads read from RAM, best of `repeats` (numpy integer sums drop the GIL)."""
    import numpy as np

    chunks = [np.ones(mib_per_thread << 17, dtype=np.int64) for _ in range(threads)]
    total = sum(c.nbytes for c in chunks)
    best = float("inf")
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(np.sum, chunks))
            best = min(best, time.perf_counter() - start)
    return total / best


def disk_free(path: Path) -> tuple[Path, int]:
    """Free bytes on the disk holding path (or its nearest existing parent)."""
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    return path, shutil.disk_usage(existing).free
