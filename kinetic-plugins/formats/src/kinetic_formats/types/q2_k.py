"""Q2_K: blocks of 256 weights in 16 runs of 16; per run a 4-bit scale s and min m, f16 d and dmin for the
block, 2-bit quants q; w = (d * s) * q - (dmin * m)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 84] uint8 -> [n, 16, 16]
    n = len(blocks)
    scales = blocks[:, :16]
    dl = (f16_at(blocks, 80) * (scales & np.uint8(15))).reshape(n, 16, 1)
    ml = (f16_at(blocks, 82) * (scales >> 4)).reshape(n, 16, 1)
    q = fields(blocks[:, 16:80], 2, 32).reshape(n, 16, 16)
    return dl * q - ml


TENSOR_TYPE = TensorType(10, "Q2_K", 256, 84, chunked(_decode, 256))
