"""MXFP4 weights as Q8_0 blocks, for Q8_0's int8 kernels. An MXFP4 weight is an integer v from -12 to 12 (its
e2m1 code's value, doubled as ggml's kvalues_mxfp4 holds it) times 2^(e - 128), e its block's exponent byte; a
Q8_0 block holds exactly that, q = v and d = 2^(e - 128) as a float16, whenever 2^(e - 128) is a float16 (e
from 104, 2^-24 the least subnormal, to 143, 2^15). So every weight is unchanged, at twice MXFP4's bytes."""

from __future__ import annotations

from typing import Optional

import numpy as np

BLOCK, Q8_0_BLOCK = 17, 34  # bytes: MXFP4's exponent and 16 bytes of codes; Q8_0's float16 d and 32 int8
F16_EXPONENTS = (104, 143)  # the exponents e whose 2^(e - 128) a float16 holds exactly
VALUES = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.int8)  # grids.MXFP4_VALUES


def as_q8_0(raw: np.ndarray) -> Optional[np.ndarray]:
    """raw: [rows, blocks * 17] uint8 MXFP4 -> [rows, blocks * 34] uint8 Q8_0 with the same weights, or None where
    a block's scale is no float16."""
    blocks = raw.reshape(-1, BLOCK)
    exponents = blocks[:, 0].astype(np.int32)
    if exponents.min(initial=F16_EXPONENTS[0]) < F16_EXPONENTS[0] or exponents.max(initial=0) > F16_EXPONENTS[1]:
        return None
    codes = blocks[:, 1:]
    out = np.empty((len(blocks), Q8_0_BLOCK), np.uint8)
    out[:, :2] = np.ldexp(np.float32(1), exponents - 128).astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:18] = VALUES[codes & 15].view(np.uint8)  # low nibbles: weights 0 to 15
    out[:, 18:] = VALUES[codes >> 4].view(np.uint8)  # high nibbles: weights 16 to 31
    return out.reshape(raw.shape[0], -1)
