"""Q5_1: blocks of 32 weights: f16 scale d and minimum m, the quants' 32 fifth bits, their low 4 bits;
w = d * q + m."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 24] uint8 -> [n, 32]
    high = fields(blocks[:, 4:8], 1, 1)  # bit j of a little-endian u32 belongs to weight j
    q = fields(blocks[:, 8:], 4, 16) | (high << np.uint8(4))
    return f16_at(blocks, 0) * q + f16_at(blocks, 2)


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 32] float32 -> [n, 24] uint8
    from kinetic_formats.types.quantizers import quantize_q5_1  # numba: imported on the first quantize

    return quantize_q5_1(values)


TENSOR_TYPE = TensorType(7, "Q5_1", 32, 24, chunked(_decode, 32), _quantize)
