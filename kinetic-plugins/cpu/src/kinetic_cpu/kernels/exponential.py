"""exp of a float64 without a libm call, so the loops that take it vectorize (attention's softmax, gates).

exp(x) = 2^k * exp(r), k = rint(x / ln 2), r = x - k ln 2 in two parts (Cody and Waite, 1980: k * LN2_HI is
exact), |r| <= ln(2)/2, exp(r) by its Taylor series to r^13 (the rest is under 5e-18 relative); 2^k is
applied as two powers, each a normal float64, so results that underflow to subnormals round once more than
libm's at worst. Within 2 ulp of libm's exp; a pure function of x, so every caller gets the same bits for
the same input whatever the batch.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from kinetic_cpu.kernels.intrinsics import bits_double

INV_LN2 = 1.4426950408889634
LN2_HI = 0.6931471803691238  # ln 2 to 32 bits: k * LN2_HI is exact for |k| < 2^21
LN2_LO = 1.9082149292705877e-10  # ln 2 - LN2_HI
TAYLOR = tuple(1.0 / np.prod(np.arange(1.0, n + 1)) for n in range(13, -1, -1))  # 1/13!, ..., 1/1!, 1


@njit(cache=True, nogil=True, inline="always")
def _power_of_two(k):  # k: int64 in [-1022, 1023]
    return bits_double((k + 1023) << 52)


@njit(cache=True, nogil=True, inline="always")
def exp(x):
    """e^x for a float64 x; inf above 709.78, 0 below -745.2, NaN for NaN."""
    clamped = 710.0 if x > 710.0 else (x if x > -746.0 else -746.0)  # NaN goes to -746: no NaN meets int64
    k = np.rint(clamped * INV_LN2)
    r = (clamped - k * LN2_HI) - k * LN2_LO
    p = TAYLOR[0]
    for c in TAYLOR[1:]:
        p = p * r + c
    n = np.int64(k)
    half = n >> 1
    return p * _power_of_two(half) * _power_of_two(n - half) if x == x else x
