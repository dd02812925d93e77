"""IQ1_M: blocks of 256 weights; IQ1_S's grid, per 8 weights an 11-bit index and the sign of a shift delta,
a 3-bit scale s per 16 weights; the f16 d is spread over the top nibbles of the four scale words;
w = (d * (2s + 1)) * (grid + delta)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, fields
from kinetic_formats.types.grids import IQ1S_DELTA, IQ1S_GRID

_NIBBLE_MASKS = np.array([0x000F, 0x00F0, 0x0F00, 0xF000], np.uint16)


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 56] uint8 -> [n, 16, 2, 8]
    n = len(blocks)
    words = blocks[:, 48:56].view("<u2")  # [n, 4]
    d_bits = np.bitwise_or.reduce((words >> np.array([12, 8, 4, 0], np.uint16)) & _NIBBLE_MASKS, axis=1)
    d = d_bits.view(np.float16).astype(np.float32)[:, None]
    scales = (words[:, :, None] >> np.array([0, 3, 6, 9], np.uint16)) & np.uint16(7)  # [n, 4, 4]
    dl = d * (np.uint16(2) * scales.reshape(n, 16) + np.uint16(1))
    nibbles = fields(blocks[:, 32:48], 4, 1)  # [n, 32]: 3 high index bits, then the sign of delta
    index = blocks[:, :32] | ((nibbles & np.uint8(7)).astype(np.uint16) << np.uint16(8))
    delta = np.where(nibbles & np.uint8(8), -IQ1S_DELTA, IQ1S_DELTA)
    grid = IQ1S_GRID[index].reshape(n, 16, 2, 8)
    return dl[:, :, None, None] * (grid + delta.reshape(n, 16, 2, 1))


TENSOR_TYPE = TensorType(29, "IQ1_M", 256, 56, chunked(_decode, 256))
