"""F16: each weight stored as a little-endian float16."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import elementwise


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 1] float32 -> [n, 2] uint8
    from kinetic_formats.types.quantizers import quantize_f16  # numba: imported on the first quantize

    return quantize_f16(values)


TENSOR_TYPE = TensorType(1, "F16", 1, 2, elementwise("<f2"), _quantize)
