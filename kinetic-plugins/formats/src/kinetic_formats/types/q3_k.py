"""Q3_K: blocks of 256 weights in 16 runs of 16; 3-bit quants (2 low bits, and a high-bit mask where a clear
bit means -4), a signed 6-bit scale s per run and an f16 d; w = (d * (s - 32)) * q."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 110] uint8 -> [n, 16, 16]
    n = len(blocks)
    high_bit = fields(blocks[:, :32], 1, 32)
    q = fields(blocks[:, 32:96], 2, 32) | (high_bit << np.uint8(2))
    # scales: low 4 bits as nibbles of bytes 96..103, high 2 bits as crumbs of bytes 104..107
    scales = fields(blocks[:, 96:104], 4, 8) | (fields(blocks[:, 104:108], 2, 4) << np.uint8(4))
    dl = f16_at(blocks, 108) * (scales.view(np.int8) - np.int8(32))
    return dl.reshape(n, 16, 1) * (q.view(np.int8) - np.int8(4)).reshape(n, 16, 16)


TENSOR_TYPE = TensorType(11, "Q3_K", 256, 110, chunked(_decode, 256))
