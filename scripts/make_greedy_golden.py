#!/usr/bin/env python3
"""Write the greedy golden files: llama.cpp's greedy tokens for a few fixed prompts, per real model.

    python scripts/make_greedy_golden.py [qwen|gemma|families ...]

Runs llama-server on the model, has it tokenize each prompt (with the model's BOS), then asks
/completion for N_PREDICT tokens at temperature 0 from the prompt's token ids, with the top-2
log-probabilities of each step (before sampling, over the whole vocabulary). It does so twice: on the
file as shipped ("as_shipped"), and on the same weights dequantized to F32 by llama-quantize
("dequantized"), where llama.cpp no longer rounds activations to 8 bits and so computes what the
reference executor computes. Each run records the tokens and each step's top-2 margin in nats, so
tests/test_reference_real.py can tell a real divergence from a near-tie without llama.cpp.
"families" writes families.json instead: llama.cpp's greedy tokens on each comparable random-weight F16 file
(kinetic.testing.gguf_factory.COMPARABLE: every family, and files with YaRN and linear rotary scaling) with the
file's sha256, for tests/test_cpu_device.py to check every family against llama.cpp without it.
Builds llama-server and llama-quantize once if they are missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from kinetic.testing import llama_cpp, real_models
from kinetic.testing.gguf_factory import COMPARABLE, write_comparable_model

OUT_DIR = Path(__file__).resolve().parent.parent / "tests" / "golden" / "greedy"
N_PREDICT = 48

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village by the sea,",
    "Q: What is 17 times 23?\nA:",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, path: str, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def wait_ready(port: int, server: subprocess.Popen) -> None:
    deadline = time.time() + 300
    while time.time() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"llama-server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError("llama-server did not become ready")


def greedy(port: int, prompt_ids: list[int]) -> dict:
    result = post(port, "/completion", {
        "prompt": prompt_ids, "n_predict": N_PREDICT, "temperature": 0, "cache_prompt": False, "n_probs": 2,
    })
    steps = result["completion_probabilities"]
    return {
        "tokens": [step["id"] for step in steps],
        "margins": [round(step["top_logprobs"][0]["logprob"] - step["top_logprobs"][1]["logprob"], 5)
                    for step in steps],
    }


def run_server(tools: Path, model: Path, work, flags: tuple[str, ...] = ()):
    """work(port) with llama-server serving model, with these flags added."""
    port = free_port()
    server = subprocess.Popen(
        [str(tools / "llama-server"), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "1024",
         "-np", "1", "-t", str(os.cpu_count() or 2), "--no-webui", *flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_ready(port, server)
        return work(port)
    finally:
        server.terminate()
        server.wait()


def make(key: str, tools: Path) -> Path:
    model = real_models.fetch(key)
    prompts = run_server(tools, model, lambda port: [
        {"text": text, "prompt_ids": post(port, "/tokenize", {"content": text, "add_special": True})["tokens"]}
        for text in PROMPTS])
    runs = {"as_shipped": run_server(tools, model, lambda port: [greedy(port, p["prompt_ids"]) for p in prompts])}
    with tempfile.TemporaryDirectory() as tmp:
        f32 = Path(tmp) / "f32.gguf"
        subprocess.run([str(tools / "llama-quantize"), "--allow-requantize", str(model), str(f32), "F32"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        runs["dequantized"] = run_server(tools, f32, lambda port: [greedy(port, p["prompt_ids"]) for p in prompts])
    for i, prompt in enumerate(prompts):
        prompt.update({run: results[i] for run, results in runs.items()})
    golden = {"model": model.name, "llama_cpp": llama_cpp.VERSION, "n_predict": N_PREDICT, "prompts": prompts}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / f"{key}.json"
    out.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    return out


def make_families(tools: Path) -> Path:
    def answers(port: int) -> list[dict]:
        out = []
        for text in PROMPTS:
            ids = post(port, "/tokenize", {"content": text, "add_special": True})["tokens"]
            out.append({"text": text, "prompt_ids": ids, "as_shipped": greedy(port, ids)})
        return out

    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (arch, metadata) in COMPARABLE.items():
            model = write_comparable_model(Path(tmp) / f"{name}.gguf", arch, "F16", metadata)
            files[name] = {"sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
                           "prompts": run_server(tools, model, answers)}
    out = OUT_DIR / "families.json"
    out.write_text(json.dumps({"llama_cpp": llama_cpp.VERSION, "n_predict": N_PREDICT, "files": files}, indent=1,
                              ensure_ascii=False) + "\n")
    return out


def main(keys: list[str]) -> int:
    tools = llama_cpp.build(("llama-server", "llama-quantize"))
    for key in keys or [*real_models.MODELS, "families"]:
        print(make_families(tools) if key == "families" else make(key, tools))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
