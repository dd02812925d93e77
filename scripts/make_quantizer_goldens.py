#!/usr/bin/env python3
"""Write tests/golden/quantizers.json: the sha256 of what ggml's reference quantizers write for the seeded inputs
of tests/test_quantizers.py (its CASES and build_case), per weight type and case.

    python scripts/make_quantizer_goldens.py

Each case's float32 [rows, values per row] goes through ggml_quantize_chunk with no importance matrix, as
llama-quantize calls it (quantize_q4_K and the rest then run quantize_row_*_ref; F16 and BF16 convert each value),
from the libggml-base.so that llama-quantize links (built once if missing). F32 is the values' bytes. The test
needs only the json.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
from pathlib import Path

import numpy as np

from kinetic.testing import llama_cpp

from kinetic.testing.quantizer_inputs import CASES, SEED, TYPES, build_case, cases_for

GOLDEN_PATH = Path(__file__).resolve().parent.parent / "tests" / "golden" / "quantizers.json"

ABOUT = ("sha256 of ggml_quantize_chunk's output (no importance matrix) for the seeded inputs of "
         "kinetic.testing.quantizer_inputs; scripts/make_quantizer_goldens.py wrote it")  # fmt: skip


def ggml_base() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(llama_cpp.build(("llama-quantize",)) / "libggml-base.so"))
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]  # fmt: skip
    return lib


def reference(lib: ctypes.CDLL, type_name: str, x: np.ndarray) -> bytes:
    """ggml's bytes for x: [rows, n] float32 in type type_name."""
    tensor_type = TYPES[type_name]
    if type_name == "F32":
        return x.astype("<f4").tobytes()
    out = np.zeros(tensor_type.nbytes(x.size), np.uint8)
    written = lib.ggml_quantize_chunk(tensor_type.id, x.ctypes.data, out.ctypes.data, 0, x.shape[0], x.shape[1],
                                      None)  # fmt: skip
    assert written == out.size, (type_name, written, out.size)
    return out.tobytes()


def main() -> None:
    lib = ggml_base()
    inputs = {name: build_case(name) for name in CASES}
    types = {}
    for type_name in TYPES:
        outputs = {name: reference(lib, type_name, inputs[name]) for name in cases_for(type_name)}
        n_blocks = sum(inputs[name].size // TYPES[type_name].block_size for name in outputs)
        types[type_name] = {
            "blocks": n_blocks,
            "sha256": hashlib.sha256(b"".join(outputs.values())).hexdigest(),  # every case's bytes, in order
            "cases": {name: hashlib.sha256(out).hexdigest() for name, out in outputs.items()},
        }
        print(f"{type_name}: {n_blocks} blocks over {len(outputs)} cases")
    golden = {
        "about": ABOUT,
        "llama_cpp": llama_cpp.VERSION,
        "seed": SEED,
        "cases": {name: {"shape": [rows, n], "what": what} for name, (rows, n, what) in CASES.items()},
        "types": types,
    }
    GOLDEN_PATH.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {GOLDEN_PATH}")


if __name__ == "__main__":
    main()
