"""IQ2_XXS: blocks of 256 weights in 8 runs of 32; per run four 8-bit indices into a grid of 8-vectors and
one u32 holding four 7-bit sign indices and a 4-bit scale s; an f16 d; w = (d * (0.5 + s) * 0.25) * grid * sign."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, ksign_indices
from kinetic_formats.types.grids import IQ2XXS_GRID, KSIGNS


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 66] uint8 -> [n, 8, 4, 8]
    runs = blocks[:, 2:].reshape(len(blocks), 8, 8)
    words = runs[:, :, 4:].view("<u4")[:, :, 0]  # [n, 8]
    db = f16_at(blocks, 0) * (np.float32(0.5) + (words >> 28).astype(np.float32)) * np.float32(0.25)
    return db[:, :, None, None] * IQ2XXS_GRID[runs[:, :, :4]] * KSIGNS[ksign_indices(words)]


TENSOR_TYPE = TensorType(16, "IQ2_XXS", 256, 66, chunked(_decode, 256))
