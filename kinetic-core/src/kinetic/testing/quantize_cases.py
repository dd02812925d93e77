"""The source files kinetic quantize is checked on against llama-quantize (scripts/make_quantize_golden.py writes
llama-quantize's sha256 of each, tests/test_quantize.py compares): random-weight models of two families, rows of
whole 256-value super-blocks and rows that are not (the K-quants' fallbacks), a Q8_0 source, and the F16 copy of
a real model (REAL: the test model, quantized to F16 first, itself checked)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from kinetic.testing.gguf_factory import Dims, write_random_model

CASES: dict[str, Callable[[Path], Path]] = {
    # 9 layers: more_bits picks layers 0, 3, 6, 7 and 8; ffn_down rows of 384 are not whole super-blocks
    "llama-f16": lambda path: write_random_model(path, "llama", Dims(n_layer=9, n_embd=256, n_head=4, n_head_kv=2,
                                                                     n_ff=384), "F16", seed=1),
    # rows of 128: every K-quant falls back; its tied embedding is quantized as the output
    "gemma3-f32": lambda path: write_random_model(path, "gemma3", Dims(n_layer=3, n_embd=128, n_head=4, n_head_kv=1,
                                                                       n_ff=256), "F32", seed=2),
    "qwen2-q8_0": lambda path: write_random_model(path, "qwen2", Dims(n_layer=4, n_embd=256, n_head=4, n_head_kv=2,
                                                                      n_ff=512), "Q8_0", seed=3),
}
TARGETS = ("Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0")
REAL = "gemma"  # kinetic.testing.real_models' key: Gemma 3 270M Q4_K_M, whose F16 copy is the source
