#!/usr/bin/env python3
"""Greedy conformance with llama.cpp: the same file, the same raw prompts, token for token.

    python scripts/conformance.py MODEL... --llama DIR [--device cpu] [-n 64] [--near-tie 0.1]
    python scripts/conformance.py --random DIR --llama DIR --device cuda [--only qwen3moe,lfm2moe]
    python scripts/conformance.py MODEL --llama DIR -ctk q8_0 -ctv q8_0

Runs llama-server (from DIR) and Kinetic on each MODEL for fixed raw prompts (token ids from llama.cpp's
tokenizer, so only the model is compared), n greedy tokens each. A divergence is forgiven when it falls
on a near-tie: a step where llama.cpp's own top two tokens are less than 0.1 nats apart, since the two
engines round differently. Prints one line per prompt; exits 1 on any divergence that is not a near-tie.
Some models amplify last-bit rounding past that bound: on Gemma 3 270M, llama.cpp with and without its
repacked Q4_K kernels (--no-repack) parts at gaps of 0.116 and 0.228, so --near-tie 0.25 for it.
--random DIR first writes small random-weight files of every family into DIR (random_files) and checks them
too. Random weights amplify rounding: on an H200 with llama.cpp built with CUDA, the F16 files agree up to
near-ties, while the Q8_0 and Q4_K_M files part at gaps of 0.1 to 1.9 nats, as llama.cpp parts from itself
with flash attention on and off (first-step log-probabilities of its top 5 differ by 0.06 to 0.49 nats on
average between Kinetic and llama.cpp, by 0.08 to 0.31 between llama.cpp's two attention kernels).
With --device cuda, llama-server puts every layer on the GPU (LLAMA_ARG_N_GPU_LAYERS), and the cuBLAS folder
that scripts/build_llamacpp_gpu.sh cuda recorded goes on LD_LIBRARY_PATH.
-ctk and -ctv give both engines those KV cache types (llama-server then runs with -fa on, which its quantized
caches need); a q8_0 cache rounds differently in the two (llama.cpp also rounds the queries to q8_0), so
expect them to part sooner.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NEAR_TIE_NATS = 0.1
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village by the sea,",
    "Q: What is 17 times 23?\nA:",
    "import numpy as np\n\n# multiply two matrices\n",
    "The three laws of thermodynamics are",
]



@dataclass(frozen=True)
class Agreement:
    matched: int  # tokens equal before the first divergence
    total: int
    near_tie: bool  # the divergence (if any) fell on a near-tie
    gap: float = 0.0  # llama.cpp's top-2 gap in nats where they part

    @property
    def ok(self) -> bool:
        return self.matched == self.total or self.near_tie

    def describe(self) -> str:
        if self.matched == self.total:
            return f"identical, {self.total} of {self.total} tokens"
        kind = "near-tie" if self.near_tie else "DIVERGED"
        return f"{kind} at token {self.matched + 1} of {self.total} (llama.cpp's top two {self.gap:.3f} nats apart)"


def agreement(ours: list[int], theirs: list[int], margins: list[float], near_tie: float = NEAR_TIE_NATS) -> Agreement:
    """Compare greedy tokens up to the first difference; margins[i]: llama.cpp's top-2 gap at step i."""
    total = min(len(ours), len(theirs))
    for i in range(total):
        if ours[i] != theirs[i]:
            return Agreement(i, total, margins[i] < near_tie, margins[i])
    return Agreement(total, total, False)


def kinetic_greedy(runner, prompt: list[int], n: int) -> list[int]:
    """n greedy tokens after prompt on a Kinetic runner (argmax, ties to the lowest id)."""
    from kinetic.contracts.device import Row

    seq = runner.new_sequence()
    rows = [Row(seq, t, p, parent=p - 1, logits=p == len(prompt) - 1) for p, t in enumerate(prompt)]
    logits = runner.forward(rows)[0]
    out: list[int] = []
    for _ in range(n):
        out.append(int(np.argmax(logits)))
        logits = runner.forward([Row(seq, out[-1], seq.n_tokens, logits=True)])[0]
    return out


def random_files(folder: Path, tools: Path, names: list[str]) -> list[Path]:
    """Each comparable random-weight model named (kinetic.testing.gguf_factory.COMPARABLE: every family, and files
    with what a file may add; all where names is empty) as F16 and Q8_0 (written by gguf-py) and, where tools has
    llama-quantize, Q4_K_M quantized from its F32 file: the same weights in each type."""
    from kinetic.testing.gguf_factory import COMPARABLE, write_comparable_model

    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, (arch, metadata) in COMPARABLE.items():
        if names and name not in names:
            continue
        for weights in ("F16", "Q8_0"):
            files.append(write_comparable_model(folder / f"{name}-{weights}.gguf", arch, weights, metadata))
        if (tools / "llama-quantize").exists():
            f32 = write_comparable_model(folder / f"{name}-F32.gguf", arch, "F32", metadata)
            files.append(folder / f"{name}-Q4_K_M.gguf")
            subprocess.run([str(tools / "llama-quantize"), str(f32), str(files[-1]), "Q4_K_M"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return files


def llama_environment(tools: Path, device: str) -> None:
    recorded = tools.resolve().parent.parent / "ld_library_path"
    if recorded.exists():
        os.environ["LD_LIBRARY_PATH"] = recorded.read_text().strip() + ":" + os.environ.get("LD_LIBRARY_PATH", "")
    if device == "cuda":
        os.environ["LLAMA_ARG_N_GPU_LAYERS"] = "99"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, nargs="*")
    parser.add_argument("--random", type=Path, help="folder to write random-weight files of every family into")
    parser.add_argument("--only", default="", help="with --random, these comparable files alone (comma-separated)")
    parser.add_argument("--llama", type=Path, required=True, help="folder with llama-server")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("-n", type=int, default=64, help="greedy tokens per prompt")
    parser.add_argument("--near-tie", type=float, default=NEAR_TIE_NATS, help="nats (default 0.1)")
    parser.add_argument("-ctk", "--cache-type-k", default="f16", choices=("f16", "q8_0"))
    parser.add_argument("-ctv", "--cache-type-v", default="f16", choices=("f16", "q8_0"))
    args = parser.parse_args(argv)

    import make_greedy_golden

    make_greedy_golden.N_PREDICT = args.n
    llama_environment(args.llama, args.device)
    names = [name for name in args.only.split(",") if name]
    models = args.models + (random_files(args.random, args.llama, names) if args.random else [])
    if not models:
        parser.error("give a MODEL or --random DIR")
    failed = [model.name for model in models if not conforms(model, args)]
    if len(models) > 1:
        print("conformance: " + (f"FAILED on {', '.join(failed)}" if failed else f"passed on {len(models)} files"))
    return 1 if failed else 0


def conforms(model: Path, args) -> bool:
    """Prints a line per prompt and one for the file; whether every prompt agreed (up to near-ties)."""
    import make_greedy_golden as llama
    from kinetic.engine.devices import open_runner
    from kinetic.model.load import load_stack
    from kinetic.contracts.device import UploadOptions

    def llama_greedy(port: int) -> list[dict]:
        answers = []
        for text in PROMPTS:
            ids = llama.post(port, "/tokenize", {"content": text, "add_special": True})["tokens"]
            answers.append({"prompt_ids": ids, **llama.greedy(port, ids)})
        return answers

    caches = (args.cache_type_k, args.cache_type_v)
    flags = ("-ctk", caches[0], "-ctv", caches[1], "-fa", "on") if caches != ("f16", "f16") else ()
    reference = llama.run_server(args.llama, model, llama_greedy, flags)
    _, runner = open_runner(load_stack(model), args.device, UploadOptions(context_length=1024, cache_types=caches),
                            print)
    failures = 0
    for text, theirs in zip(PROMPTS, reference):
        result = agreement(kinetic_greedy(runner, theirs["prompt_ids"], args.n), theirs["tokens"], theirs["margins"],
                           args.near_tie)
        failures += not result.ok
        print(f"{text[:40]!r:44} {result.describe()}")
    print("conformance: " + ("FAILED" if failures else "passed") + f" on {model.name}", flush=True)
    return failures == 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
