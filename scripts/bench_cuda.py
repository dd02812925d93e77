"""pp512 and tg128 of the CUDA device on random-weight files shaped like Llama 3.2 1B and 3B, as llama-bench
measures them: a 512-token prompt in one pass, and 128 one-token decode steps from an empty context.

The files are written here (gguf-py cannot quantize K-quants, so the blocks are random bytes with sane
scales) in the mix of a Q4_K_M file: Q4_K, with Q6_K for attn_v, ffn_down and the tied embedding.

    python scripts/bench_cuda.py [--models 1b,3b] [--dir DIR] [-r 3] [--json] [--llama-bench PATH]

With --llama-bench (built with CUDA: scripts/build_llamacpp_cuda.sh), llama.cpp runs beside it on the same
files, one engine at a time: `llama-bench -ngl 99 -fa 1 -p 512 -n 128`, best of -r, and a ratio table.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import gguf
import numpy as np

from kinetic.cli.llama_bench import run_llama_bench
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.testing.gguf_factory import write_gguf
from kinetic.testing.random_weights import random_blocks

SHAPES = {  # n_embd, n_layer, n_ff, n_head, n_head_kv, as Llama 3.2 1B and 3B
    "1b": (2048, 16, 8192, 32, 8),
    "3b": (3072, 28, 8192, 24, 8),
}
N_VOCAB = 128256
TYPES = {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K", "ffn_gate": "Q4_K",
         "ffn_up": "Q4_K", "ffn_down": "Q6_K"}


def write_model(path: Path, name: str) -> Path:
    n_embd, n_layer, n_ff, n_head, n_head_kv = SHAPES[name]
    kv = n_embd // n_head * n_head_kv
    shapes = {"attn_q": (n_embd, n_embd), "attn_k": (kv, n_embd), "attn_v": (kv, n_embd),
              "attn_output": (n_embd, n_embd), "ffn_gate": (n_ff, n_embd), "ffn_up": (n_ff, n_embd),
              "ffn_down": (n_embd, n_ff)}
    rng = np.random.default_rng(0)
    tensors = {"token_embd.weight": (random_blocks("Q6_K", N_VOCAB, n_embd, rng), gguf.GGMLQuantizationType.Q6_K),
               "output_norm.weight": np.ones(n_embd, np.float32)}
    for i in range(n_layer):
        tensors[f"blk.{i}.attn_norm.weight"] = np.ones(n_embd, np.float32)
        tensors[f"blk.{i}.ffn_norm.weight"] = np.ones(n_embd, np.float32)
        for kind, (rows, k) in shapes.items():
            tensors[f"blk.{i}.{kind}.weight"] = (random_blocks(TYPES[kind], rows, k, rng),
                                                 gguf.GGMLQuantizationType[TYPES[kind]])
    metadata = {"llama.context_length": 131072, "llama.embedding_length": n_embd, "llama.block_count": n_layer,
                "llama.feed_forward_length": n_ff, "llama.attention.head_count": n_head,
                "llama.attention.head_count_kv": n_head_kv, "llama.attention.layer_norm_rms_epsilon": 1e-5,
                "llama.rope.freq_base": 500000.0, "general.name": f"random Llama 3.2 {name.upper()} shape",
                "llama.vocab_size": N_VOCAB, "tokenizer.ggml.model": "none"}  # llama.cpp then makes dummy tokens
    return write_gguf(path, "llama", metadata, tensors)


def best(reps: int, run) -> float:
    """The shortest of reps timed calls of run(), after one untimed call."""
    run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(path: Path, reps: int) -> dict:
    runner = plugins().devices["cuda"].upload(load_stack(path), UploadOptions(context_length=4096))
    seq = runner.new_sequence()
    prompt = np.random.default_rng(1).integers(0, N_VOCAB, 512).tolist()

    def pp512():
        seq.truncate(0)
        runner.forward([Row(seq, t, p, parent=p - 1, logits=p == 511) for p, t in enumerate(prompt)])

    def tg128():
        seq.truncate(0)
        for p in range(128):
            runner.forward([Row(seq, prompt[p], p, logits=True)])

    pp, tg = best(reps, pp512), best(reps, tg128)
    return {"model": path.name, "gpu": runner.device_name, "pp512": 512 / pp, "tg128": 128 / tg}


def llama_bench(binary: Path, path: Path, reps: int) -> dict:
    """llama-bench's best pp512 and tg128 with every layer on the GPU; the cuBLAS folder that
    build_llamacpp_cuda.sh recorded goes on LD_LIBRARY_PATH."""
    recorded = binary.resolve().parent.parent.parent / "ld_library_path"
    if recorded.exists():
        os.environ["LD_LIBRARY_PATH"] = recorded.read_text().strip() + ":" + os.environ.get("LD_LIBRARY_PATH", "")
    return run_llama_bench(str(binary), path, os.cpu_count() or 1, reps, gpu=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="1b,3b")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kinetic-bench"))
    parser.add_argument("-r", "--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--llama-bench", type=Path, help="llama-bench built with CUDA, to run beside Kinetic")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        path = args.dir / f"llama-3.2-{name}-shape-q4_k_m.gguf"
        if not path.exists():
            write_model(path, name)
        r = measure(path, args.reps)
        if args.llama_bench:
            r["llama.cpp"] = llama_bench(args.llama_bench, path, args.reps)
        print(json.dumps(r) if args.json else f"{r['model']:36} {r['gpu']:16} pp512 {r['pp512']:9.1f} t/s   "
                                              f"tg128 {r['tg128']:7.1f} t/s", flush=True)
        if args.llama_bench and not args.json:
            theirs = r["llama.cpp"]
            print(" " * 53 + "llama.cpp " + "   ".join(f"{test} {theirs[test]:9.1f} t/s ({r[test] / theirs[test]:.2f}x)"
                                                        for test in ("pp512", "tg128")))


if __name__ == "__main__":
    main()
