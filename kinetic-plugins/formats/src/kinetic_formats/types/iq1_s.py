"""IQ1_S: blocks of 256 weights in 8 runs of 32; 11-bit indices into a grid of ternary 8-vectors, per run a
u16 with the index high bits, a 3-bit scale s and the sign of a shift delta; an f16 d;
w = (d * (2s + 1)) * (grid + delta)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at
from kinetic_formats.types.grids import IQ1S_DELTA, IQ1S_GRID


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 50] uint8 -> [n, 8, 4, 8]
    n = len(blocks)
    words = blocks[:, 34:50].view("<u2")  # [n, 8]
    dl = f16_at(blocks, 0) * (np.uint16(2) * ((words >> 12) & np.uint16(7)) + np.uint16(1))
    delta = np.where(words & np.uint16(0x8000), -IQ1S_DELTA, IQ1S_DELTA)
    high = (words[:, :, None] >> np.array([0, 3, 6, 9], np.uint16)) & np.uint16(7)  # [n, 8, 4]
    index = blocks[:, 2:34].reshape(n, 8, 4) | (high << np.uint16(8))
    return dl[:, :, None, None] * (IQ1S_GRID[index] + delta[:, :, None, None])


TENSOR_TYPE = TensorType(19, "IQ1_S", 256, 50, chunked(_decode, 256))
