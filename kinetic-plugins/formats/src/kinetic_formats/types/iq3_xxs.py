"""IQ3_XXS: blocks of 256 weights in 8 runs of 32; 8-bit indices into a grid of 4-vectors, per run one u32
holding four 7-bit sign indices (one per 8 weights) and a 4-bit scale s; an f16 d;
w = (d * (0.5 + s) * 0.5) * grid * sign."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, ksign_indices
from kinetic_formats.types.grids import IQ3XXS_GRID, KSIGNS


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 98] uint8 -> [n, 8, 4, 8]
    words = blocks[:, 66:98].view("<u4")  # [n, 8]
    db = f16_at(blocks, 0) * (np.float32(0.5) + (words >> 28).astype(np.float32)) * np.float32(0.5)
    grid = IQ3XXS_GRID[blocks[:, 2:66]].reshape(len(blocks), 8, 4, 8)
    return db[:, :, None, None] * grid * KSIGNS[ksign_indices(words)]


TENSOR_TYPE = TensorType(18, "IQ3_XXS", 256, 98, chunked(_decode, 256))
