"""IQ3_S: blocks of 256 weights in 8 runs of 32; 9-bit indices into a grid of 4-vectors (8 low bits, then
the high bits), a sign byte per 8 weights, a 4-bit scale s per run and an f16 d; w = (d * (1 + 2s)) * grid * sign."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields
from kinetic_formats.types.grids import IQ3S_GRID, SIGNS


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 110] uint8 -> [n, 8, 32]
    n = len(blocks)
    index = blocks[:, 2:66] | (fields(blocks[:, 66:74], 1, 1).astype(np.uint16) << np.uint16(8))  # [n, 64]
    db = f16_at(blocks, 0) * (np.uint8(1) + np.uint8(2) * fields(blocks[:, 106:110], 4, 1))  # [n, 8]
    grid = IQ3S_GRID[index].reshape(n, 8, 32)
    return db[:, :, None] * grid * SIGNS[blocks[:, 74:106]].reshape(n, 8, 32)


TENSOR_TYPE = TensorType(21, "IQ3_S", 256, 110, chunked(_decode, 256))
