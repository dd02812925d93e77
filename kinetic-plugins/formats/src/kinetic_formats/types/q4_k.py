"""Q4_K: blocks of 256 weights in 8 runs of 32; 6-bit scale s and min m per run, f16 d and dmin for the
block, 4-bit quants q; w = (d * s) * q - (dmin * m)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, fields, k4_scales_mins


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 144] uint8 -> [n, 8, 32]
    dl, ml = k4_scales_mins(blocks)
    q = fields(blocks[:, 16:], 4, 32).reshape(len(blocks), 8, 32)
    return dl * q - ml


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 256] float32 -> [n, 144] uint8
    from kinetic_formats.types.quantizers import quantize_q4_k  # numba: imported on the first quantize

    return quantize_q4_k(values)


TENSOR_TYPE = TensorType(12, "Q4_K", 256, 144, chunked(_decode, 256), _quantize)
