"""pp512 and tg128 of a GPU device (CUDA, or Vulkan with --device vulkan) on random-weight files shaped like Llama 3.2 1B and 3B and Qwen3-30B-A3B,
as llama-bench measures them: a 512-token prompt in one pass, and 128 one-token decode steps from an empty context.

The files are written here (gguf-py cannot quantize K-quants, so the blocks are random bytes with sane
scales) in the mix of a Q4_K_M file: Q4_K, with Q6_K for attn_v, ffn_down (the experts' too) and the embedding.

    python scripts/bench_gpu.py [--device cuda|vulkan] [--models 1b,3b,30b-a3b] [--dir DIR] [-r 3] [--json]
                                [--llama-bench PATH] [--gpu-memory GIB]

With --llama-bench (built for the same device: scripts/build_llamacpp_gpu.sh), llama.cpp runs beside it on the same
files, one engine at a time: `llama-bench -ngl 99 -fa 1 -p 512 -n 128`, best of -r, and a ratio table.
--gpu-memory caps the GPU memory Kinetic takes, so a mixture's experts that do not fit run under Flywheel;
llama.cpp then keeps every layer's experts on the CPU (-ncmoe, its --cpu-moe).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import NamedTuple, Optional

import gguf
import numpy as np

from kinetic.cli.llama_bench import run_llama_bench
from kinetic.contracts.device import Row, UploadOptions
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.testing.gguf_factory import write_gguf
from kinetic.testing.random_weights import random_blocks


class Shape(NamedTuple):
    arch: str
    label: str
    n_embd: int
    n_layer: int
    n_ff: int  # an expert's width in a mixture
    n_head: int
    n_head_kv: int
    head_dim: int
    n_vocab: int
    experts: Optional[tuple[int, int]] = None  # (n_expert, n_used)
    tied: bool = True  # the output layer is the embedding's


SHAPES = {
    "1b": Shape("llama", "llama-3.2-1b", 2048, 16, 8192, 32, 8, 64, 128256),
    "3b": Shape("llama", "llama-3.2-3b", 3072, 28, 8192, 24, 8, 128, 128256),
    "30b-a3b": Shape("qwen3moe", "qwen3-30b-a3b", 2048, 48, 768, 32, 4, 128, 151936, (128, 8), tied=False),
}
TYPES = {"attn_q": "Q4_K", "attn_k": "Q4_K", "attn_v": "Q6_K", "attn_output": "Q4_K", "ffn_gate": "Q4_K",
         "ffn_up": "Q4_K", "ffn_down": "Q6_K"}


def quantized(kind: str, rows: int, k: int, rng: np.random.Generator, n_expert: int = 0) -> tuple:
    """(random blocks [rows, row bytes], or [n_expert, rows, row bytes] for a stack of experts, type)."""
    blocks = random_blocks(TYPES[kind], max(n_expert, 1) * rows, k, rng)
    return (blocks.reshape(n_expert, rows, -1) if n_expert else blocks), gguf.GGMLQuantizationType[TYPES[kind]]


def layer_tensors(shape: Shape, rng: np.random.Generator) -> dict:
    """One layer's tensors, by name after blk.N."""
    d, q, kv, n_ff = shape.n_embd, shape.n_head * shape.head_dim, shape.n_head_kv * shape.head_dim, shape.n_ff
    tensors = {"attn_norm.weight": np.ones(d, np.float32), "ffn_norm.weight": np.ones(d, np.float32),
               "attn_q.weight": quantized("attn_q", q, d, rng), "attn_k.weight": quantized("attn_k", kv, d, rng),
               "attn_v.weight": quantized("attn_v", kv, d, rng),
               "attn_output.weight": quantized("attn_output", d, q, rng)}
    if shape.experts is None:
        return tensors | {f"{kind}.weight": quantized(kind, rows, k, rng)
                          for kind, rows, k in (("ffn_gate", n_ff, d), ("ffn_up", n_ff, d), ("ffn_down", d, n_ff))}
    n_expert = shape.experts[0]
    return tensors | {"attn_q_norm.weight": np.ones(shape.head_dim, np.float32),
                      "attn_k_norm.weight": np.ones(shape.head_dim, np.float32),
                      "ffn_gate_inp.weight": rng.standard_normal((n_expert, d)).astype(np.float32) * 0.05,
                      **{f"{kind}_exps.weight": quantized(kind, rows, k, rng, n_expert)
                         for kind, rows, k in (("ffn_gate", n_ff, d), ("ffn_up", n_ff, d), ("ffn_down", d, n_ff))}}


def write_model(path: Path, shape: Shape) -> Path:
    rng = np.random.default_rng(0)
    embedding = (random_blocks("Q6_K", shape.n_vocab, shape.n_embd, rng), gguf.GGMLQuantizationType.Q6_K)
    tensors = {"token_embd.weight": embedding, "output_norm.weight": np.ones(shape.n_embd, np.float32)}
    if not shape.tied:
        tensors["output.weight"] = (random_blocks("Q6_K", shape.n_vocab, shape.n_embd, rng), embedding[1])
    for i in range(shape.n_layer):
        tensors |= {f"blk.{i}.{name}": tensor for name, tensor in layer_tensors(shape, rng).items()}
    a = shape.arch
    metadata = {f"{a}.context_length": 40960, f"{a}.embedding_length": shape.n_embd,
                f"{a}.block_count": shape.n_layer, f"{a}.feed_forward_length": shape.n_ff,
                f"{a}.attention.head_count": shape.n_head, f"{a}.attention.head_count_kv": shape.n_head_kv,
                f"{a}.attention.key_length": shape.head_dim, f"{a}.attention.value_length": shape.head_dim,
                f"{a}.attention.layer_norm_rms_epsilon": 1e-6, f"{a}.rope.freq_base": 1000000.0,
                "general.name": f"random {shape.label} shape", f"{a}.vocab_size": shape.n_vocab,
                "tokenizer.ggml.model": "none"}  # llama.cpp then makes dummy tokens
    if shape.experts:
        metadata |= {f"{a}.expert_count": shape.experts[0], f"{a}.expert_used_count": shape.experts[1],
                     f"{a}.expert_feed_forward_length": shape.n_ff}
    return write_gguf(path, a, metadata, tensors)


def best(reps: int, run) -> float:
    """The shortest of reps timed calls of run(), after one untimed call."""
    run()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(device: str, path: Path, shape: Shape, reps: int, gpu_memory: Optional[int]) -> dict:
    options = UploadOptions(context_length=4096, gpu_memory=gpu_memory)
    runner = plugins().devices[device].upload(load_stack(path), options)
    seq = runner.new_sequence()
    prompt = np.random.default_rng(1).integers(0, shape.n_vocab, 512).tolist()

    def pp512():
        seq.truncate(0)
        runner.forward([Row(seq, t, p, parent=p - 1, logits=p == 511) for p, t in enumerate(prompt)])

    def tg128():
        seq.truncate(0)
        for p in range(128):
            runner.forward([Row(seq, prompt[p], p, logits=True)])

    pp, tg = best(reps, pp512), best(reps, tg128)
    return {"model": path.name, "gpu": runner.device_name, "pp512": 512 / pp, "tg128": 128 / tg}


def llama_bench(binary: Path, path: Path, reps: int, extra: tuple[str, ...]) -> dict:
    """llama-bench's best pp512 and tg128 with every layer on the GPU (but for extra's -ncmoe); the cuBLAS
    folder that build_llamacpp_gpu.sh recorded goes on LD_LIBRARY_PATH."""
    recorded = binary.resolve().parent.parent.parent / "ld_library_path"
    if recorded.exists():
        os.environ["LD_LIBRARY_PATH"] = recorded.read_text().strip() + ":" + os.environ.get("LD_LIBRARY_PATH", "")
    return run_llama_bench(binary, path, os.cpu_count() or 1, reps, gpu=True, extra=extra)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "vulkan"))
    parser.add_argument("--models", default="1b,3b")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kinetic-bench"))
    parser.add_argument("-r", "--reps", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--llama-bench", type=Path, help="llama-bench built for the device, to run beside Kinetic")
    parser.add_argument("--gpu-memory", type=float, help="GiB of GPU memory Kinetic may take (Flywheel)")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    cap = int(args.gpu_memory * (1 << 30)) if args.gpu_memory else None
    for name in args.models.split(","):
        shape = SHAPES[name]
        path = args.dir / f"{shape.label}-shape-q4_k_m.gguf"
        if not path.exists():
            write_model(path, shape)
        r = measure(args.device, path, shape, args.reps, cap)
        if args.llama_bench:
            extra = ("-ncmoe", str(shape.n_layer)) if cap and shape.experts else ()
            r["llama.cpp"] = llama_bench(args.llama_bench, path, args.reps, extra)
        print(json.dumps(r) if args.json else f"{r['model']:36} {r['gpu']:16} pp512 {r['pp512']:9.1f} t/s   "
                                              f"tg128 {r['tg128']:7.1f} t/s", flush=True)
        if args.llama_bench and not args.json:
            theirs = r["llama.cpp"]
            print(" " * 53 + "llama.cpp " + "   ".join(f"{test} {theirs[test]:9.1f} t/s ({r[test] / theirs[test]:.2f}x)"
                                                        for test in ("pp512", "tg128")))


if __name__ == "__main__":
    main()
