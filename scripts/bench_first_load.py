#!/usr/bin/env python3
"""The first load on a fresh machine: `kinetic run` on a model with an empty numba cache, then again with the cache
it left, each run's wall time to its answer's end.

    python scripts/bench_first_load.py MODEL [-r 2] [-n 32] [--kinetic CMD] [--chat-template-file FILE]

Each round makes an empty cache folder (NUMBA_CACHE_DIR) and runs `kinetic run MODEL PROMPT -n N --temp 0 --off
warm-start` twice in it: fresh, then cached. Its standard error is a pseudo-terminal, as a user's would be, so the
run warms its kernels before the prompt and reports the seconds it spent compiling. Prints a markdown table of
every run; the processes compiling aside may still be at work when a fresh run answers, and the script waits for
them before the cached run.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from chat_servers import kinetic_command

PROMPT = "Write a haiku about rivers."
COMPILED = re.compile(r"compiling kernels, once: (\d+) s")


def timed_run(command: list[str], cache: Path) -> tuple[float, str, str]:
    """(wall seconds, the answer, the compile seconds kinetic reported or '') of one run with cache as numba's."""
    leader, follower = pty.openpty()
    said: list[bytes] = []
    reader = threading.Thread(target=_drain, args=(leader, said))
    reader.start()
    started = time.perf_counter()
    done = subprocess.run(command, env={**os.environ, "NUMBA_CACHE_DIR": str(cache)}, stdout=subprocess.PIPE,
                          stderr=follower, text=True)
    seconds = time.perf_counter() - started
    os.close(follower)
    reader.join()
    os.close(leader)
    errors = b"".join(said).decode(errors="replace")
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{errors[-2000:]}")
    compiled = COMPILED.search(errors)
    return seconds, done.stdout, compiled.group(1) if compiled else ""


def _drain(fd: int, into: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the other end closed
            return
        if not chunk:
            return
        into.append(chunk)


def settled(cache: Path) -> None:
    """Wait until no process compiling aside for this cache is left (their logs' files are open until they end)."""
    while subprocess.run(["pgrep", "-f", f"kinetic_cpu.aside {cache}"], capture_output=True).returncode == 0:
        time.sleep(0.5)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-r", "--rounds", type=int, default=2)
    parser.add_argument("-n", "--tokens", type=int, default=32)
    parser.add_argument("--kinetic", help="the kinetic command [default: kinetic on PATH, else python -m kinetic]")
    parser.add_argument("--chat-template-file", type=Path, help="for a model without a chat template")
    args = parser.parse_args(argv)
    command = [*kinetic_command(args.kinetic), "run", str(args.model), PROMPT, "-n", str(args.tokens), "--temp",
               "0", "--off", "warm-start"]
    if args.chat_template_file:
        command += ["--chat-template-file", str(args.chat_template_file)]
    print("| round | cache | seconds to the answer's end | compiling, as kinetic reports it (s) |")
    print("| ---: | --- | ---: | ---: |")
    answers = set()
    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="kinetic-first-load-") as folder:
            cache = Path(folder) / "numba"
            for kind in ("empty", "as the first run left it"):
                seconds, answer, compiled = timed_run(command, cache)
                answers.add(answer)
                print(f"| {round_} | {kind} | {seconds:.1f} | {compiled} |", flush=True)
                settled(cache)
    print(f"\n{args.model.name}, {os.cpu_count()} CPUs; every run's answer the same: {len(answers) == 1}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
