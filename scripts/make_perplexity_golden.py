#!/usr/bin/env python3
"""Write tests/golden/perplexity.json: llama-perplexity's scores of tests/data/perplexity.txt on both real test
models (-c 512, the first CHUNKS chunks): each chunk's running estimate and the final PPL with its uncertainty,
with llama.cpp's repacked CPU kernels on (its default) and off (--no-repack), whose difference tells how far two
correct sets of kernels part on the same file.

    python scripts/make_perplexity_golden.py

Builds llama-perplexity once if it is missing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from kinetic.testing import llama_cpp, real_models

ROOT = Path(__file__).resolve().parent.parent
TEXT = ROOT / "tests" / "data" / "perplexity.txt"
OUT = ROOT / "tests" / "golden" / "perplexity.json"
CHUNKS, N_CTX = 3, 512


def score(tools: Path, model: Path, *flags: str) -> dict:
    done = subprocess.run([str(tools / "llama-perplexity"), "-m", str(model), "-f", str(TEXT), "-c", str(N_CTX),
                           "--chunks", str(CHUNKS), *flags], capture_output=True, text=True, check=True)
    log = done.stdout + done.stderr
    final = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", log)
    return {"running": [float(v) for v in re.findall(r"\[\d+\]([\d.]+),", log)], "ppl": float(final[1]),
            "uncertainty": float(final[2])}


def main() -> int:
    tools = llama_cpp.build(("llama-perplexity",))
    models = {}
    for key in ("qwen", "gemma"):
        model = real_models.fetch(key)
        models[key] = {"model": model.name, "repacked": score(tools, model), "no_repack": score(tools, model, "--no-repack")}
    OUT.write_text(json.dumps({"llama_cpp": llama_cpp.VERSION, "n_ctx": N_CTX, "chunks": CHUNKS, "models": models},
                              indent=1) + "\n")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
