"""Q6_K: blocks of 256 weights in 16 runs of 16; 6-bit quants q (4 low bits, 2 high bits), an int8 scale s per
run and an f16 d; w = (d * s) * (q - 32)."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at, fields


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 210] uint8 -> [n, 16, 16]
    n = len(blocks)
    q = fields(blocks[:, :128], 4, 64) | (fields(blocks[:, 128:192], 2, 32) << np.uint8(4))
    dl = f16_at(blocks, 208) * blocks[:, 192:208].view(np.int8)
    return dl.reshape(n, 16, 1) * (q.view(np.int8) - np.int8(32)).reshape(n, 16, 16)


def _quantize(values: np.ndarray) -> np.ndarray:  # values: [n, 256] float32 -> [n, 210] uint8
    from kinetic_formats.types.quantizers import quantize_q6_k  # numba: imported on the first quantize

    return quantize_q6_k(values)


TENSOR_TYPE = TensorType(14, "Q6_K", 256, 210, chunked(_decode, 256), _quantize)
