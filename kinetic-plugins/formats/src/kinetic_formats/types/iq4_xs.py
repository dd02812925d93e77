"""IQ4_XS: blocks of 256 weights in 8 runs of 32; IQ4_NL's table, a 6-bit scale s per run (4 low bits, 2 high
bits) and an f16 d; w = (d * (s - 32)) * value."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields
from kinetic_formats.types.grids import IQ4NL_VALUES


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 136] uint8 -> [n, 8, 32]
    n = len(blocks)
    scales = fields(blocks[:, 4:8], 4, 1) | (fields(blocks[:, 2:4], 2, 1) << np.uint8(4))
    dl = f16_at(blocks, 0) * (scales.view(np.int8) - np.int8(32))
    values = IQ4NL_VALUES[fields(blocks[:, 8:], 4, 16)]
    return dl.reshape(n, 8, 1) * values.reshape(n, 8, 32)


TENSOR_TYPE = TensorType(23, "IQ4_XS", 256, 136, chunked(_decode, 256))
