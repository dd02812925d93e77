"""Random weight matrices in any GGUF type, as raw bytes [rows, row_bytes] uint8, for kernel tests and
benchmarks: random normal floats quantized by gguf-py where it can quantize the type, else random
block bytes whose f16 scales are overwritten with small finite values (no NaN, inf or subnormal)."""

from __future__ import annotations

import numpy as np

from kinetic.contracts import TensorType

# byte offsets of the f16 scales (d, dmin) inside one block, per type
F16_SCALES = {
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q2_K": (80, 82), "Q3_K": (108,), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
    "IQ4_NL": (0,), "IQ4_XS": (0,), "IQ2_XXS": (0,), "IQ2_XS": (0,), "IQ2_S": (0,), "IQ3_XXS": (0,),
    "IQ3_S": (0,), "TQ2_0": (64,),
}  # fmt: skip


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
    return raw.reshape(rows, -1)
