"""Q5_K: Q4_K with a fifth, high bit per quant: blocks of 256 weights in 8 runs of 32; w = (d * s) * q - (dmin * m)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, fields, k4_scales_mins


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 176] uint8 -> [n, 8, 32]
    dl, ml = k4_scales_mins(blocks)
    q = fields(blocks[:, 48:], 4, 32) | (fields(blocks[:, 16:48], 1, 32) << np.uint8(4))
    return dl * q.reshape(len(blocks), 8, 32) - ml


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 256] float32 -> [n, 176] uint8
    from kinetic_formats.types.quantizers import quantize_q5_k  # numba: imported on the first quantize

    return quantize_q5_k(values)


TENSOR_TYPE = TensorType(13, "Q5_K", 256, 176, chunked(_decode, 256), _quantize)
