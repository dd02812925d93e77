"""Q4_1: blocks of 32 weights, f16 scale d and minimum m, 4-bit quants q; w = d * q + m."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 20] uint8 -> [n, 32]
    q = fields(blocks[:, 4:], 4, 16)
    return f16_at(blocks, 0) * q + f16_at(blocks, 2)


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 32] float32 -> [n, 20] uint8
    from kinetic_formats.types.quantizers import quantize_q4_1  # numba: imported on the first quantize

    return quantize_q4_1(values)


TENSOR_TYPE = TensorType(3, "Q4_1", 32, 20, chunked(_decode, 32), _quantize)
