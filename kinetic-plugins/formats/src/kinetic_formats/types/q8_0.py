"""Q8_0: blocks of 32 weights, an f16 scale d and int8 quants q; w = d * q."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 34] uint8 -> [n, 32]
    return f16_at(blocks, 0) * blocks[:, 2:].view(np.int8)


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 32] float32 -> [n, 34] uint8
    from kinetic_formats.types.quantizers import quantize_q8_0  # numba: imported on the first quantize

    return quantize_q8_0(values)


TENSOR_TYPE = TensorType(8, "Q8_0", 32, 34, chunked(_decode, 32), _quantize)
