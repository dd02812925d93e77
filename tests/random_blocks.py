"""Random raw weights of any GGUF type gguf-py cannot quantize (the K-quants): random quant bytes with the
f16 scales set to small normal values, so every weight is finite and of a sane size."""

from __future__ import annotations

import numpy as np

from kinetic.plugins import plugins

# byte offsets of each block's f16 scales, and their size
SCALES = {"Q8_0": ((0,), 0.004), "Q4_0": ((0,), 0.02), "Q4_1": ((0, 2), 0.02), "Q5_0": ((0,), 0.01),
          "Q5_1": ((0, 2), 0.01), "Q2_K": ((80, 82), 0.005), "Q3_K": ((108,), 0.005), "Q4_K": ((0, 2), 0.002),
          "Q5_K": ((0, 2), 0.001), "Q6_K": ((208,), 0.0005)}
FLOATS = {"F32": np.float32, "F16": np.float16}


def random_blocks(type_name: str, rows: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """[rows, row_bytes] uint8: rows of k weights of type_name."""
    kind = plugins().tensor_types[type_name]
    if type_name in FLOATS:
        return (rng.standard_normal((rows, k)) * 0.1).astype(FLOATS[type_name]).view(np.uint8)
    if type_name == "BF16":
        bits = (rng.standard_normal((rows, k)) * 0.1).astype(np.float32).view(np.uint32) >> 16  # truncated
        return bits.astype(np.uint16).view(np.uint8)
    n_blocks = k // kind.block_size
    blocks = rng.integers(0, 256, (rows * n_blocks, kind.type_size), dtype=np.uint8)
    offsets, size = SCALES[type_name]
    for at in offsets:
        scales = (rng.uniform(0.5, 1.5, rows * n_blocks) * size).astype(np.float16)
        blocks[:, at : at + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, n_blocks * kind.type_size)
