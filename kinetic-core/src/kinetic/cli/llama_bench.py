"""`kinetic bench --compare`: llama.cpp's own llama-bench on the same file, threads and repetitions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Optional

from kinetic import __version__, system
from kinetic.errors import KineticError
from kinetic.paths import cache_dir
from kinetic.system import GIB

USUAL_FOLDERS = ("/usr/local/bin", "/opt/llama.cpp/bin", "~/llama.cpp/build/bin", "~/.local/bin")


def find_llama_bench(given: str) -> Path:
    """The llama-bench given, else on PATH, in the usual folders or a build in Kinetic's cache. Never downloaded."""
    if given:
        path = Path(given).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            what = "is not executable" if path.is_file() else "not found"
            raise KineticError(f"llama-bench {what} at {path}; give the path of llama.cpp's llama-bench: "
                               "--compare PATH")
        return path
    found = shutil.which("llama-bench")
    candidates = [Path(found)] if found else []
    candidates += [Path(folder).expanduser() / "llama-bench" for folder in USUAL_FOLDERS]
    candidates += sorted(cache_dir().glob("llama.cpp-*/build-*/bin/llama-bench"))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise KineticError("llama-bench not found on PATH or in the usual folders; give its path: --compare PATH")


def run_llama_bench(binary: Path, model: Path, threads: int, repetitions: int, gpu: bool = False,
                    cache_types: tuple[str, str] = ("f16", "f16"), extra: tuple[str, ...] = ()) -> dict:
    """llama-bench's best pp512 and tg128, flash attention on, with its build: on the CPU (-ngl 0), or with
    every layer on the GPU (-ngl 99); with Kinetic's KV cache types (-ctk, -ctv), its extra arguments (say
    -ncmoe 48); and its peak memory. binary: find_llama_bench's."""
    command = [str(binary), "-m", str(model), "-p", "512", "-n", "128", "-r", str(repetitions), "-t", str(threads),
               "-ngl", "99" if gpu else "0", "-fa", "1", "-ctk", cache_types[0], "-ctv", cache_types[1], "-o", "json",
               *extra]
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as error:
        raise KineticError(f"llama-bench could not start: {error.strerror} ({binary})") from None
    peak = 0
    while True:  # its high-water mark, read while it runs: a finished child's ru_maxrss counts this process too
        peak = max(peak, _high_water(process.pid) or 0)
        try:
            stdout, stderr = process.communicate(timeout=0.05)
            break
        except subprocess.TimeoutExpired:
            pass
    if process.returncode != 0:
        raise KineticError(f"llama-bench failed: {(stderr.strip().splitlines() or ['no output'])[-1]}")
    runs = json.loads(stdout)
    best = {("pp512" if r["n_prompt"] else "tg128"): max(r["samples_ts"]) for r in runs}
    first = runs[0]
    return {"build": f"b{first.get('build_number', '?')} ({first.get('build_commit', '?')})",
            "pp512": best.get("pp512"), "tg128": best.get("tg128"), "cpu": first.get("cpu_info", ""),
            "gpu": first.get("gpu_info", ""), "peak_rss_bytes": peak or None}


def _high_water(pid: int) -> Optional[int]:
    """A running process's peak resident memory in bytes (Linux's VmHWM), or None where it cannot be read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return int(line.split()[1]) * 1024 if line else None


def compare_card(report: dict, llama: dict, name: str) -> list[str]:
    rows = [("prompt pp512", report["prefill_tokens_per_second"], llama["pp512"]),
            ("generate tg128", report["decode_tokens_per_second"], llama["tg128"])]
    lines = [f"## Kinetic vs llama.cpp: {name}", "",
             f"| test | Kinetic {__version__} | llama.cpp {llama['build']} | ratio |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {test} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |" for test, ours, theirs in rows]
    theirs = f"{llama['peak_rss_bytes'] / GIB:.2f} GiB" if llama["peak_rss_bytes"] else "not measured here"
    return lines + ["", f"peak memory: Kinetic {report['peak_rss_bytes'] / GIB:.2f} GiB, llama-bench {theirs}",
                    f"{llama['cpu'] or system.cpu().model}, {system.os_description()}",
                    f"Same file ({report['size_bytes'] / (1 << 30):.2f} GiB), on {report['device']}, "
                    f"{report['threads']} threads, "
                    f"flash attention on, best of {report['repetitions']}, t/s."]
