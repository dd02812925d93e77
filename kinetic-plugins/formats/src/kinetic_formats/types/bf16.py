"""BF16: each weight stored as the upper 16 bits of a float32, little-endian."""

import numpy as np

from kinetic.contracts import TensorType


def _dequantize(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 2] uint8 -> [n, 1]
    upper = np.ascontiguousarray(blocks, dtype=np.uint8).view("<u2")
    return (upper.astype(np.uint32) << 16).view(np.float32)


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 1] float32 -> [n, 2] uint8
    """ggml_compute_fp32_to_bf16 (ggml-impl.h): the upper 16 bits rounded to nearest even; a NaN made quiet."""
    u = np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)  # no NaN wraps
    bits = np.where(nan, (u >> np.uint32(16)) | np.uint32(64), rounded).astype("<u2")
    return bits.view(np.uint8).reshape(-1, 2)


TENSOR_TYPE = TensorType(30, "BF16", 1, 2, _dequantize, _quantize)
