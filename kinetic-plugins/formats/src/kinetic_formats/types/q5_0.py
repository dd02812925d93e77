"""Q5_0: blocks of 32 weights: an f16 scale d, the quants' 32 fifth bits, their low 4 bits; w = d * (q - 16)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 22] uint8 -> [n, 32]
    high = fields(blocks[:, 2:6], 1, 1)  # bit j of a little-endian u32 belongs to weight j
    q = fields(blocks[:, 6:], 4, 16) | (high << np.uint8(4))
    return f16_at(blocks, 0) * (q.view(np.int8) - np.int8(16))


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 32] float32 -> [n, 22] uint8
    from kinetic_formats.types.quantizers import quantize_q5_0  # numba: imported on the first quantize

    return quantize_q5_0(values)


TENSOR_TYPE = TensorType(6, "Q5_0", 32, 22, chunked(_decode, 32), _quantize)
