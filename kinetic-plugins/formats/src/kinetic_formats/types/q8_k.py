"""Q8_K: blocks of 256 weights: a float32 scale d, int8 quants q, and int16 sums of each 16 q that only dot
products use; w = d * q."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 292] uint8 -> [n, 256]
    return blocks[:, :4].view("<f4") * blocks[:, 4:260].view(np.int8)


TENSOR_TYPE = TensorType(15, "Q8_K", 256, 292, chunked(_decode, 256))
