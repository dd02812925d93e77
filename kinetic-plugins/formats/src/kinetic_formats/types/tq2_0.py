"""TQ2_0: blocks of 256 ternary weights, 2-bit quants q and an f16 scale d; w = (q - 1) * d."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 66] uint8 -> [n, 256]
    q = fields(blocks[:, :64], 2, 32)
    return (q.view(np.int8) - np.int8(1)) * f16_at(blocks, 64)


TENSOR_TYPE = TensorType(35, "TQ2_0", 256, 66, chunked(_decode, 256))
