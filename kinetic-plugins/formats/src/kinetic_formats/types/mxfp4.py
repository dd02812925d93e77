"""MXFP4: blocks of 32 weights, 4-bit e2m1 codes and a shared power-of-two scale (e8m0 exponent e);
w = value(code) * 2^(e - 128), with values doubled as in ggml."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, fields
from kinetic_formats.types.grids import MXFP4_VALUES


def _half_scale(e: np.ndarray) -> np.ndarray:  # e: [n, 1] uint8 -> [n, 1] float32
    """2^(e - 128) built from its bits: subnormal for e < 2, else exponent field e - 1."""
    e = e.astype(np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23))
    return bits.view(np.float32)


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 17] uint8 -> [n, 32]
    return MXFP4_VALUES[fields(blocks[:, 1:], 4, 16)] * _half_scale(blocks[:, :1])


TENSOR_TYPE = TensorType(39, "MXFP4", 32, 17, chunked(_decode, 32))
