"""Q4_0: blocks of 32 weights, an f16 scale d and 4-bit quants q; w = d * (q - 8)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 18] uint8 -> [n, 32]
    q = fields(blocks[:, 2:], 4, 16)
    return f16_at(blocks, 0) * (q.view(np.int8) - np.int8(8))


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 32] float32 -> [n, 18] uint8
    from kinetic_formats.types.quantizers import quantize_q4_0  # numba: imported on the first quantize

    return quantize_q4_0(values)


TENSOR_TYPE = TensorType(2, "Q4_0", 32, 18, chunked(_decode, 32), _quantize)
