#!/usr/bin/env python3
"""Kinetic against llama.cpp through their servers: the same file, the same threads, one server at a time.

    python scripts/bench_vs_llamacpp.py MODEL --llama DIR [-t THREADS] [-r 3]

Each server (kinetic serve; llama-server plain; llama-server with its speculative mode --spec-type
ngram-simple) gets, on 127.0.0.1: a 512-token raw prompt for one token (prompt speed), and the editing
request of `kinetic bench`'s edit256 (a short Rust file, then the start of its rewrite with one name
changed; up to 256 greedy tokens). Times are wall times of the whole request, best of -r; the edit speed
is the answer's tokens (tokens_predicted) over that time. Prints a markdown table and whether every engine's edit answer matches.
For llama-bench's pp512/tg128 beside Kinetic's own, use `kinetic bench MODEL --compare`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from make_greedy_golden import free_port, wait_ready

from kinetic.engine.bench import EDIT_TEXT, EDIT_TOKENS


def post(port: int, body: dict, path: str = "/completion") -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as response:
        return json.load(response)


def timed(port: int, body: dict, repetitions: int) -> tuple[float, dict]:
    """(best wall seconds, the last answer) of the same request, repeated; the prompt cache is off, so
    every repetition does the whole work."""
    best, answer = float("inf"), {}
    for _ in range(repetitions):
        start = time.perf_counter()
        answer = post(port, {**body, "cache_prompt": False})
        best = min(best, time.perf_counter() - start)
    return best, answer


def measure(command: list[str], port: int, repetitions: int) -> dict:
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, server)
        filler = " ".join(f"item{i}" for i in range(2000))
        tokens = post(port, {"content": filler}, "/tokenize")["tokens"][:512]
        prompt_seconds, _ = timed(port, {"prompt": tokens, "n_predict": 1, "temperature": 0}, repetitions)
        edit_seconds, edit = timed(port, {"prompt": EDIT_TEXT, "n_predict": EDIT_TOKENS, "temperature": 0}, repetitions)
        return {"pp512": len(tokens) / prompt_seconds, "edit": edit["tokens_predicted"] / edit_seconds,
                "text": edit["content"]}
    finally:
        server.terminate()
        server.wait()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--llama", type=Path, required=True, help="folder with llama-server")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    args = parser.parse_args(argv)
    common = ["-m", str(args.model), "-c", "2048", "-t", str(args.threads), "--host", "127.0.0.1"]
    engines = {
        "Kinetic (RAD-1)": [sys.executable, "-m", "kinetic", "serve", *common, "--device", "cpu", "--no-prompt-cache"],
        "llama-server": [str(args.llama / "llama-server"), *common, "-np", "1", "--no-webui"],
        "llama-server ngram-simple": [str(args.llama / "llama-server"), *common, "-np", "1", "--no-webui",
                                      "--spec-type", "ngram-simple"],
    }
    results = {}
    for name, command in engines.items():
        port = free_port()
        results[name] = measure([*command, "--port", str(port)], port, args.repetitions)
    print(f"| engine | pp512 t/s | edit {EDIT_TOKENS} t/s |\n| --- | ---: | ---: |")
    for name, result in results.items():
        print(f"| {name} | {result['pp512']:.1f} | {result['edit']:.1f} |")
    texts = {result["text"] for result in results.values()}
    print(f"\n{args.model.name}, {args.threads} threads, best of {args.repetitions}, wall time per request; "
          f"edit answers identical across engines: {'yes' if len(texts) == 1 else 'no (rounding differs)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
