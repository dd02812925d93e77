"""BF16: each weight stored as the upper 16 bits of a float32, little-endian."""

import numpy as np

from kinetic.contracts import TensorType


def _dequantize(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 2] uint8 -> [n, 1]
    upper = np.ascontiguousarray(blocks, dtype=np.uint8).view("<u2")
    return (upper.astype(np.uint32) << 16).view(np.float32)


TENSOR_TYPE = TensorType(30, "BF16", 1, 2, _dequantize)
