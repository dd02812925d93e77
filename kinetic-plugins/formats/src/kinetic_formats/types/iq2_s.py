"""IQ2_S: blocks of 256 weights; per 8 weights a 10-bit index into a grid of 8-vectors (8 low bits, 2 high
bits) and a sign byte; a 4-bit scale s per 16 weights and an f16 d; w = (d * (0.5 + s) * 0.25) * grid * sign."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields
from kinetic_formats.types.grids import IQ2S_GRID, SIGNS


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 82] uint8 -> [n, 16, 2, 8]
    n = len(blocks)
    index = blocks[:, 2:34] | (fields(blocks[:, 66:74], 2, 1).astype(np.uint16) << np.uint16(8))  # [n, 32]
    scales = fields(blocks[:, 74:82], 4, 1)  # [n, 16]
    db = f16_at(blocks, 0) * (np.float32(0.5) + scales.astype(np.float32)) * np.float32(0.25)
    grid = IQ2S_GRID[index].reshape(n, 16, 2, 8)
    return db[:, :, None, None] * grid * SIGNS[blocks[:, 34:66]].reshape(n, 16, 2, 8)


TENSOR_TYPE = TensorType(22, "IQ2_S", 256, 82, chunked(_decode, 256))
