"""IQ2_XS: blocks of 256 weights; per 8 weights a u16 holding a 9-bit index into a grid of 8-vectors and a
7-bit sign index; a 4-bit scale s per 16 weights and an f16 d; w = (d * (0.5 + s) * 0.25) * grid * sign."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields
from kinetic_formats.types.grids import IQ2XS_GRID, KSIGNS


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 74] uint8 -> [n, 16, 2, 8]
    n = len(blocks)
    codes = blocks[:, 2:66].view("<u2")  # [n, 32]
    scales = fields(blocks[:, 66:74], 4, 1)  # [n, 16]
    db = f16_at(blocks, 0) * (np.float32(0.5) + scales.astype(np.float32)) * np.float32(0.25)
    grid = IQ2XS_GRID[codes & np.uint16(511)].reshape(n, 16, 2, 8)
    return db[:, :, None, None] * grid * KSIGNS[codes >> 9].reshape(n, 16, 2, 8)


TENSOR_TYPE = TensorType(17, "IQ2_XS", 256, 74, chunked(_decode, 256))
