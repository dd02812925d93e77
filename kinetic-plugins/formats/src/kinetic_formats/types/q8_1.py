"""Q8_1: blocks of 32 weights, an f16 scale d, an f16 s = d * sum(q) for dot products, int8 quants q; w = d * q."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 36] uint8 -> [n, 32]
    return f16_at(blocks, 0) * blocks[:, 4:].view(np.int8)


TENSOR_TYPE = TensorType(9, "Q8_1", 32, 36, chunked(_decode, 32))
