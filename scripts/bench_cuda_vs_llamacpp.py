"""Kinetic's CUDA device beside llama.cpp built with CUDA, on the same random-weight files shaped like Llama 3.2
1B and 3B (scripts/bench_cuda.py writes them): pp512 and tg128 of each, one engine at a time.

llama.cpp runs as `llama-bench -m FILE -ngl 99 -fa 1 -p 512 -n 128 -r REPS -o json`; Kinetic as bench_cuda.py
measures (best of REPS, after one untimed run). Build llama-bench first (scripts/build_llamacpp_cuda.sh):

    python scripts/bench_cuda_vs_llamacpp.py --llama-bench BUILD/build/bin/llama-bench [--models 1b,3b] [-r 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cuda import measure, write_model  # noqa: E402


def llama_bench(binary: Path, path: Path, reps: int) -> dict:
    """llama-bench's average t/s for pp512 and tg128 on path."""
    command = [str(binary), "-m", str(path), "-ngl", "99", "-fa", "1", "-p", "512", "-n", "128", "-r", str(reps),
               "-o", "json"]
    env = dict(os.environ)
    ld_path = binary.parent.parent.parent / "ld_library_path"  # written by build_llamacpp_cuda.sh
    if ld_path.exists():
        env["LD_LIBRARY_PATH"] = ld_path.read_text().strip() + ":" + env.get("LD_LIBRARY_PATH", "")
    runs = json.loads(subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout)
    speeds = {}
    for run in runs:
        test = f"pp{run['n_prompt']}" if run["n_prompt"] else f"tg{run['n_gen']}"
        speeds[test] = run["avg_ts"]
    return {"gpu": runs[0].get("gpu_info", ""), **speeds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-bench", type=Path, required=True)
    parser.add_argument("--models", default="1b,3b")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kinetic-bench"))
    parser.add_argument("-r", "--reps", type=int, default=3)
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        path = args.dir / f"llama-3.2-{name}-shape-q4_k_m.gguf"
        if not path.exists():
            write_model(path, name)
        ours, theirs = measure(path, args.reps), llama_bench(args.llama_bench, path, args.reps)
        rows.append((path.name, ours, theirs))
        print(json.dumps({"model": path.name, "kinetic": ours, "llama.cpp": theirs}), flush=True)
    print(f"{'model':36} {'test':6} {'Kinetic t/s':>12} {'llama.cpp t/s':>14} {'ratio':>6}")
    for name, ours, theirs in rows:
        for test in ("pp512", "tg128"):
            print(f"{name:36} {test:6} {ours[test]:12.1f} {theirs[test]:14.1f} {ours[test] / theirs[test]:6.2f}")


if __name__ == "__main__":
    main()
