"""Random weight matrices in GGUF types, as raw bytes [rows, row_bytes] uint8, for kernel tests and benchmarks.

random_weights: random normal floats quantized by gguf-py where it can quantize the type, else random
block bytes whose f16 (or E8M0) scales are overwritten with small finite values (no NaN, inf or subnormal);
the CPU kernel tests and benchmark use it.
random_blocks: random quant bytes for any type, with f16 scales of a size set per type so every weight is
finite and of a sane size, as trained weights are; the CUDA tests' tolerances were measured on them.
"""

from __future__ import annotations

import numpy as np

from kinetic.contracts import TensorType
from kinetic.plugins import plugins

# byte offsets of the f16 scales (d, dmin) inside one block, per type
F16_SCALES = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
    "IQ4_NL": (0,), "IQ4_XS": (0,), "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,), "IQ3_XXS": (0,),
    "IQ3_S": (0,), "TQ2_0": (64,),
}  # fmt: skip
E8M0_SCALES = {"MXFP4": 0}  # the byte offset of a block's E8M0 scale, 2^(e - 128)


def _floats(tensor_type: TensorType, values: np.ndarray) -> np.ndarray:
    if tensor_type.name == "BF16":
        return (values.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    return values.astype({"F32": np.float32, "F16": np.float16}[tensor_type.name]).view(np.uint8)


def _gguf_quantized(tensor_type: TensorType, values: np.ndarray) -> np.ndarray | None:
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    try:
        return quantize(values, GGMLQuantizationType(tensor_type.id)).view(np.uint8)
    except NotImplementedError:
        return None


def random_weights(tensor_type: TensorType, rows: int, k: int, rng: np.random.Generator, quantize: bool = True):
    """[rows, k / block_size * type_size] uint8; quantize=False skips gguf-py (fast, for large benchmarks)."""
    values = rng.standard_normal((rows, k), dtype=np.float32)
    if tensor_type.name in ("F32", "F16", "BF16"):
        return _floats(tensor_type, values).reshape(rows, -1)
    raw = _gguf_quantized(tensor_type, values) if quantize else None
    if raw is None:
        raw = rng.integers(0, 256, (rows * k // tensor_type.block_size, tensor_type.type_size), dtype=np.uint8)
        for at in F16_SCALES.get(tensor_type.name, ()):
            scales = rng.uniform(0.001, 0.01, (len(raw), 1)).astype(np.float16)
            raw[:, at : at + 2] = scales.view(np.uint8)
        if tensor_type.name in E8M0_SCALES:  # 2^-10 to 2^-7: random exponents are mostly subnormal or huge
            raw[:, E8M0_SCALES[tensor_type.name]] = rng.integers(118, 122, len(raw), dtype=np.uint8)
    return raw.reshape(rows, -1)


# random_blocks' scale sizes: its f16 scales (at F16_SCALES) are uniform in 0.5 to 1.5 times these
SCALE_SIZES = {"Q8_0": 0.004, "Q4_0": 0.02, "Q4_1": 0.02, "Q5_0": 0.01, "Q5_1": 0.01, "Q2_K": 0.005, "Q3_K": 0.005,
               "Q4_K": 0.002, "Q5_K": 0.001, "Q6_K": 0.0005}
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
    if type_name == "MXFP4":  # its scale a power of two 2^(e - 128): weights up to 12 * 2^-5
        blocks[:, 0] = rng.integers(118, 124, rows * n_blocks)
        return blocks.reshape(rows, n_blocks * kind.type_size)
    size = SCALE_SIZES[type_name]
    for at in F16_SCALES[type_name]:
        scales = (rng.uniform(0.5, 1.5, rows * n_blocks) * size).astype(np.float16)
        blocks[:, at : at + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, n_blocks * kind.type_size)
