"""IQ4_NL: blocks of 32 weights, 4-bit indices into a fixed non-linear table and an f16 scale d; w = d * value."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields
from kinetic_formats.types.grids import IQ4NL_VALUES


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 18] uint8 -> [n, 32]
    return f16_at(blocks, 0) * IQ4NL_VALUES[fields(blocks[:, 2:], 4, 16)]


TENSOR_TYPE = TensorType(20, "IQ4_NL", 32, 18, chunked(_decode, 32))
