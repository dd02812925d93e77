"""Activation rows quantized to int8 blocks, as llama.cpp's CPU backend does on x86 (quantize_row_q8_0
with AVX2, quantize_row_q8_K_ref), so the quantized kernels take integer dot products per block.

Q8_0: blocks of 32, scale d = amax / 127 rounded to f16, q = x * (127 / amax) rounded half to even, as
ggml's AVX2 quantize_row_q8_0 does (the reference quantizer's roundf(x / d) parts from it on ties and in
the last bit of the inverse, and llama.cpp on x86 runs the AVX2 one); the block sums of q serve
the types with a minimum (Q4_1, Q5_1), as ggml's Q8_1 does. Q8_K: blocks of 256, scale d = max / -127
(max: the value of largest magnitude), q = nearest int of x / d, and the sum of every 16 q.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kinetic_cpu.kernels.intrinsics import bits_float, float_bits


@njit(cache=True, nogil=True)
def f16_round(value):
    """The float32 `value` rounded to the nearest float16 (ties to even), as float32."""
    bits = float_bits(value)
    sign, magnitude = bits & 0x80000000, bits & 0x7FFFFFFF
    if magnitude >= 0x7F800000:  # inf, NaN
        return value
    if magnitude >= 0x477FF000:  # rounds past 65504
        return bits_float(sign | 0x7F800000)
    if magnitude >= 0x38800000:  # a normal float16: keep 10 mantissa bits
        return bits_float(sign | ((magnitude + 0xFFF + ((magnitude >> 13) & 1)) & ~0x1FFF))
    return np.float32(math.copysign(np.rint(abs(value) * np.float32(2.0**24)) * 2.0**-24, value))


@njit(cache=True, nogil=True)
def quantize_q8_0(x):  # x: [n, k] float32, k % 32 == 0
    """-> q [n, k] int8, d [n, k/32] float32, sums [n, k/32] int32."""
    n, k = x.shape
    q = np.empty((n, k), np.int8)
    d = np.empty((n, k // 32), np.float32)
    sums = np.empty((n, k // 32), np.int32)
    for t in range(n):
        for b in range(k // 32):
            amax = np.float32(0.0)
            for j in range(32 * b, 32 * b + 32):
                amax = max(amax, abs(x[t, j]))
            inverse = np.float32(127.0) / amax if amax != 0 else np.float32(0.0)
            total = 0
            for j in range(32 * b, 32 * b + 32):
                q[t, j] = np.rint(x[t, j] * inverse)
                total += q[t, j]
            d[t, b] = f16_round(amax / np.float32(127.0))
            sums[t, b] = total
    return q, d, sums


@njit(cache=True, nogil=True)
def quantize_q8_k(x):  # x: [n, k] float32, k % 256 == 0
    """-> q [n, k] int8, d [n, k/256] float32, sums [n, k/16] int32 (one per 16 q)."""
    n, k = x.shape
    q = np.zeros((n, k), np.int8)
    d = np.zeros((n, k // 256), np.float32)
    sums = np.zeros((n, k // 16), np.int32)
    for t in range(n):
        for b in range(k // 256):
            amax, peak = np.float32(0.0), np.float32(0.0)
            for j in range(256 * b, 256 * b + 256):
                if abs(x[t, j]) > amax:
                    amax, peak = abs(x[t, j]), x[t, j]
            if amax == 0:
                continue
            inverse = np.float32(-127.0) / peak
            for j in range(256 * b, 256 * b + 256):
                q[t, j] = min(127, np.rint(inverse * x[t, j]))
                sums[t, j // 16] += q[t, j]
            d[t, b] = np.float32(1.0) / inverse
    return q, d, sums
