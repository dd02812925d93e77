#!/usr/bin/env python3
"""`kinetic bench --compare` on random-weight files shaped like the smallest real model of each new family,
for families with no real model here (issues 22's and 23's speed tables).

    python scripts/bench_families.py --llama-dir DIR [--models lfm2-350m] [--dir DIR] [-t 2] [-r 3]

Each file is written once (gguf-py, F32, with kinetic.testing.gguf_factory's tensors and keys), quantized to
Q4_K_M (gpt-oss: MXFP4_MOE, its experts in MXFP4 as the real model ships them) by DIR/llama-quantize, then measured by `kinetic bench --compare DIR/llama-bench`: pp512 and tg128 of
Kinetic beside llama-bench's on the same file and threads, one engine at a time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
from pathlib import Path

from kinetic.paths import cache_dir
from kinetic.testing.gguf_factory import Dims, write_random_model

# The smallest real model of each family: its dimensions and the keys that give its layers their kinds.
LFM2_350M_KINDS = "ccaccaccacacacac"  # LiquidAI/LFM2-350M's layer_types: c conv, a attention
GRANITE_H_350M_ATTENTION = (10, 13, 17, 27)  # about Granite-4.0-H-350M: 4 of 32 layers attend, 28 are Mamba-2
# Falcon-H1-0.5B's sizes, but for heads of 128 rather than 64 (the factory's heads span n_embd); Qwen3.5-0.8B's,
# but with 4 attention heads of 256 (8 in the model) and 1 KV head (2); Qwen3-30B-A3B's (issue 23: its 128 experts,
# 8 a token, 768 wide), but 4 of its 48 layers, to fit this machine, and 16 heads of 128 (32 in the model);
# gpt-oss-20b's expert count, 4 a token, and sliding window, at a width of 1024 (2880) in 4 layers (24)
SHAPES = {
    "lfm2-350m": ("lfm2", Dims(n_layer=16, n_embd=1024, n_head=16, n_head_kv=8, n_ff=4608, n_vocab=65536),
                  {"lfm2.attention.head_count_kv": [8 if kind == "a" else 0 for kind in LFM2_350M_KINDS],
                   "lfm2.rope.freq_base": 1000000.0, "lfm2.context_length": 128000}),
    "granite-4.0-h-350m": ("granitehybrid",
                           Dims(n_layer=32, n_embd=768, n_head=12, n_head_kv=4, n_ff=2048, n_vocab=100352),
                           {"granitehybrid.attention.head_count_kv": [4 if i in GRANITE_H_350M_ATTENTION else 0
                                                                      for i in range(32)],
                            "granitehybrid.ssm.state_size": 128, "granitehybrid.ssm.time_step_rank": 48,
                            "granitehybrid.context_length": 32768}),
    "falcon-h1-0.5b": ("falcon-h1", Dims(n_layer=36, n_embd=1024, n_head=8, n_head_kv=2, n_ff=2048, n_vocab=32784),
                       {"falcon-h1.ssm.inner_size": 1536, "falcon-h1.ssm.state_size": 128,
                        "falcon-h1.ssm.time_step_rank": 24, "falcon-h1.context_length": 16384}),
    "qwen3.5-0.8b": ("qwen35", Dims(n_layer=24, n_embd=1024, n_head=4, n_head_kv=1, n_ff=3584, n_vocab=248320),
                     {"qwen35.ssm.state_size": 128, "qwen35.ssm.group_count": 16, "qwen35.ssm.time_step_rank": 16,
                      "qwen35.ssm.inner_size": 2048, "qwen35.full_attention_interval": 4,
                      "qwen35.rope.dimension_count": 64, "qwen35.rope.dimension_sections": [11, 11, 10, 0],
                      "qwen35.context_length": 32768}),
    "qwen3-30b-a3b-4l": ("qwen3moe", Dims(n_layer=4, n_embd=2048, n_head=16, n_head_kv=4, n_ff=6144, n_vocab=151936),
                         {"qwen3moe.expert_count": 128, "qwen3moe.expert_used_count": 8,
                          "qwen3moe.expert_feed_forward_length": 768, "qwen3moe.rope.freq_base": 1000000.0,
                          "qwen3moe.context_length": 40960}),
    "gpt-oss-4l": ("gpt-oss", Dims(n_layer=4, n_embd=1024, n_head=16, n_head_kv=4, n_ff=1024, n_vocab=32000),
                   {"gpt-oss.expert_count": 32, "gpt-oss.expert_used_count": 4,
                    "gpt-oss.expert_feed_forward_length": 1024, "gpt-oss.attention.sliding_window": 128}),
}
QUANTIZATION = {"gpt-oss-4l": "MXFP4_MOE"}  # llama-quantize's type for each shape; Q4_K_M where not named


def shaped_file(name: str, folder: Path, tools: Path) -> Path:
    """The quantized file (QUANTIZATION), written once. The F32 file is written by a child process: the benchmark's peak memory
    (ru_maxrss, which a process keeps across exec) would otherwise start at this one's, the whole F32 model."""
    kind = QUANTIZATION.get(name, "Q4_K_M")
    quantized = folder / f"{name}-{kind}.gguf"
    if not quantized.exists():
        f32 = folder / f"{name}-F32.gguf"
        writer = multiprocessing.get_context("spawn").Process(target=write_shaped, args=(name, f32))
        writer.start()
        writer.join()
        if writer.exitcode:
            raise RuntimeError(f"writing {f32} failed (exit {writer.exitcode})")
        subprocess.run([str(tools / "llama-quantize"), str(f32), str(quantized), kind], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        f32.unlink()
    return quantized


def write_shaped(name: str, path: Path) -> None:
    arch, dims, metadata = SHAPES[name]
    write_random_model(path, arch, dims, "F32", seed=1, metadata=metadata)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-dir", type=Path, required=True, help="folder with llama-quantize and llama-bench")
    parser.add_argument("--models", default=",".join(SHAPES))
    parser.add_argument("--dir", type=Path, default=cache_dir() / "bench-families")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        path = shaped_file(name, args.dir, args.llama_dir)
        print(f"== {name} ({path})", flush=True)
        subprocess.run([sys.executable, "-m", "kinetic", "bench", str(path), "-t", str(args.threads), "-r",
                        str(args.repetitions), "--compare", str(args.llama_dir / "llama-bench")], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
