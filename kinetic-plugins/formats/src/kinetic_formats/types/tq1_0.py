"""TQ1_0: blocks of 256 ternary weights, five (or four) base-3 digits per byte and an f16 scale d;
w = (digit - 1) * d."""

import numpy as np

from kinetic.contracts import TensorType

from kinetic_formats.types._common import chunked, f16_at

_POWERS_OF_3 = np.array([1, 3, 9, 27, 81], np.uint8)


def _digits(packed: np.ndarray, run: int, count: int) -> np.ndarray:  # packed: [n, m] uint8 -> [n, m * count] int8
    """A byte holds its digits as a fraction of 256, most significant first: multiplying by 3^k (mod 256)
    brings digit k to the front, and * 3 >> 8 reads it. Within each run of bytes, digit k of every byte
    comes before digit k + 1."""
    n, m = packed.shape
    shifted = packed.reshape(n, m // run, 1, run) * _POWERS_OF_3[:count, None]
    return ((shifted.astype(np.uint16) * np.uint16(3)) >> 8).astype(np.int8).reshape(n, -1)


def _decode(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, 54] uint8 -> [n, 256]
    digits = np.concatenate(
        [_digits(blocks[:, :32], 32, 5), _digits(blocks[:, 32:48], 16, 5), _digits(blocks[:, 48:52], 4, 4)],
        axis=1,
    )
    return (digits - np.int8(1)) * f16_at(blocks, 52)


TENSOR_TYPE = TensorType(34, "TQ1_0", 256, 54, chunked(_decode, 256))
