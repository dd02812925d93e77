#!/usr/bin/env python3
"""Write tests/golden/quantize.json: the sha256 of llama-quantize's output for every source file of
kinetic.testing.quantize_cases and every target type (no importance matrix; --allow-requantize for the quantized
sources), with the type llama-quantize gave each tensor; and of the real test model's F16 copy and every target
made from that copy.

    python scripts/make_quantize_golden.py

Builds llama-quantize once if it is missing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import gguf

from kinetic.testing import llama_cpp, real_models
from kinetic.testing.quantize_cases import CASES, REAL, TARGETS

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "quantize.json"


def quantized(tool: Path, source: Path, out: Path, target: str) -> dict:
    subprocess.run([str(tool), "--allow-requantize", str(source), str(out), target], check=True, capture_output=True)
    return {"sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
            "types": {t.name: t.tensor_type.name for t in gguf.GGUFReader(out).tensors}}


def main() -> None:
    tool = llama_cpp.build(("llama-quantize",)) / "llama-quantize"
    golden: dict = {}
    with tempfile.TemporaryDirectory() as folder:
        sources = {case: write(Path(folder) / f"{case}.gguf") for case, write in CASES.items()}
        copy = Path(folder) / f"{REAL}-f16.gguf"
        golden[f"{REAL}-f16"] = {"F16": quantized(tool, real_models.fetch(REAL), copy, "F16")}
        sources[f"{REAL}-f16"] = copy
        for case, source in sources.items():
            for target in TARGETS:
                golden.setdefault(case, {})[target] = quantized(tool, source, Path(folder) / f"{case}-{target}.gguf",
                                                                target)
    OUT.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
