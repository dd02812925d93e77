"""F32: each weight stored as a little-endian float32."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 1] float32 -> [n, 4] uint8
    return np.ascontiguousarray(values, dtype="<f4").reshape(-1).view(np.uint8).reshape(-1, 4)


TENSOR_TYPE = TensorType(0, "F32", 1, 4, elementwise("<f4"), _quantize)
