"""llama.cpp's reference quantizers, byte for byte: what llama-quantize writes without an importance matrix.

Each kernel follows its C function in ggml-quants.c (quantize_row_*_ref, and the make_q*_quants helpers
they call) operation by operation: float32 throughout, sums in the C loop's order, the C comparisons, no
fused multiply-adds and no fast-math (ggml-base is built without -march flags, so its float code is plain
IEEE float32; error_model "numpy" makes a division by zero give inf or NaN, as in C). f16 goes through
ggml-impl.h's portable ggml_compute_fp32_to_fp16 / _fp16_to_fp32 (BF16 and F32 need no numba: bf16.py,
f32.py). Blocks are independent, so runs of blocks are spread over numba's threads (numba.set_num_threads
picks how many) without changing a byte.

Weights are expected finite. With NaN or infinite weights the bytes matched ggml's on x86-64 in a spot check,
but Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 then cast NaN or out-of-range floats to int, undefined in C and LLVM alike,
so those are not promised (F16 converts every value, NaN and inf included, exactly as ggml does).

This module imports numba; the type modules import it only when a quantize is called.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

_BLOCKS_PER_JOB = 256  # blocks one thread does at a time; each job allocates its scratch once


# ---- bits, rounding and f16 (ggml-impl.h, ggml-quants.c nearest_int) ----


@intrinsic
def _bits(typingctx, value):
    """_bits(float32) -> int64: the IEEE bits, zero-extended (C: memcpy into a uint32_t)."""

    def codegen(context, builder, signature, args):
        return builder.zext(builder.bitcast(args[0], ir.IntType(32)), ir.IntType(64))

    return types.int64(types.float32), codegen


@intrinsic
def _float(typingctx, bits):
    """_float(int64) -> float32: the float whose IEEE bits are the low 32 bits."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.trunc(args[0], ir.IntType(32)), ir.FloatType())

    return types.float32(types.int64), codegen


@njit(cache=True, nogil=True, error_model="numpy")
def nearest_int(fval):
    """ggml-quants.c nearest_int: round half to even through the 12582912.f trick, bits as C reads them."""
    return (_bits(fval + np.float32(12582912.0)) & 0x7FFFFF) - 0x400000


@njit(cache=True, nogil=True, error_model="numpy")
def fp32_to_fp16(f):
    """ggml_compute_fp32_to_fp16 (portable): float32 -> f16 bits as int64 (round to nearest even; NaN 0x7E00)."""
    base = (abs(f) * np.float32(2.0**112)) * np.float32(2.0**-110)
    w = _bits(f)
    shl1_w = (w + w) & 0xFFFFFFFF
    sign = w & 0x80000000
    bias = shl1_w & 0xFF000000
    if bias < 0x71000000:
        bias = 0x71000000
    base = _float((bias >> 1) + 0x07800000) + base
    bits = _bits(base)
    nonsign = ((bits >> 13) & 0x7C00) + (bits & 0xFFF)
    return ((sign >> 16) | (0x7E00 if shl1_w > 0xFF000000 else nonsign)) & 0xFFFF


@njit(cache=True, nogil=True, error_model="numpy")
def fp16_to_fp32(h):
    """ggml_compute_fp16_to_fp32: f16 bits (int64) -> float32."""
    w = h << 16
    sign = w & 0x80000000
    two_w = (w + w) & 0xFFFFFFFF
    normalized = _float((two_w >> 4) + (0xE0 << 23)) * np.float32(2.0**-112)
    denormalized = _float((two_w >> 17) | (126 << 23)) - np.float32(0.5)
    if two_w < (1 << 27):
        return _float(sign | _bits(denormalized))
    return _float(sign | _bits(normalized))


@njit(cache=True, nogil=True, error_model="numpy")
def _put_f16(out, at, f):  # out: [type_size] uint8
    """GGML_FP32_TO_FP16 into out[at:at + 2], little-endian; gives GGML_FP16_TO_FP32 of what was stored."""
    h = fp32_to_fp16(f)
    out[at] = h & 0xFF
    out[at + 1] = h >> 8
    return fp16_to_fp32(h)


@njit(cache=True, nogil=True, error_model="numpy")
def _roundf(v):
    """C roundf (half away from zero) of a float32, as an int64; exact in float64 for any float32."""
    r = math.floor(abs(np.float64(v)) + 0.5)
    return int(-r if v < 0 else r)


# ---- Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 ----


@njit(cache=True, nogil=True, error_model="numpy")
def _q8_0_block(x, out):  # x: [32] float32, out: [34] uint8
    """quantize_row_q8_0_ref, one block: d = amax / 127, q = roundf(x / d)."""
    amax = np.float32(0.0)
    for j in range(32):
        v = abs(x[j])
        amax = amax if amax > v else v  # MAX(amax, fabsf(v))
    d = amax / np.float32(127.0)
    inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
    _put_f16(out, 0, d)
    for j in range(32):
        out[2 + j] = _roundf(x[j] * inv) & 0xFF


@njit(cache=True, nogil=True, error_model="numpy")
def _signed_max(x):  # x: [32] float32
    """quantize_row_q4_0_ref / q5_0_ref: the first weight of largest magnitude, with its sign (0 if none)."""
    amax = np.float32(0.0)
    mx = np.float32(0.0)
    for j in range(x.shape[0]):
        if amax < abs(x[j]):
            amax = abs(x[j])
            mx = x[j]
    return mx


@njit(cache=True, nogil=True, error_model="numpy")
def _min_max(x):  # x: [32] float32
    """quantize_row_q4_1_ref / q5_1_ref: min and max, each the first that wins a strict comparison."""
    mn = np.float32(3.4028234663852886e38)  # FLT_MAX
    mx = np.float32(-3.4028234663852886e38)
    for j in range(x.shape[0]):
        if x[j] < mn:
            mn = x[j]
        if x[j] > mx:
            mx = x[j]
    return mn, mx


@njit(cache=True, nogil=True, error_model="numpy")
def _q4_0_block(x, out):  # x: [32] float32, out: [18] uint8
    """quantize_row_q4_0_ref, one block: d = max / -8, q = min(15, (int8_t)(x / d + 8.5))."""
    d = _signed_max(x) / np.float32(-8.0)
    inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
    _put_f16(out, 0, d)
    for j in range(16):
        q0 = min(15, int(x[j] * inv + np.float32(8.5)))
        q1 = min(15, int(x[16 + j] * inv + np.float32(8.5)))
        out[2 + j] = q0 | (q1 << 4)


@njit(cache=True, nogil=True, error_model="numpy")
def _q4_1_block(x, out):  # x: [32] float32, out: [20] uint8
    """quantize_row_q4_1_ref, one block: d = (max - min) / 15, q = min(15, (int8_t)((x - min) / d + 0.5))."""
    mn, mx = _min_max(x)
    d = (mx - mn) / np.float32(15.0)
    inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
    _put_f16(out, 0, d)
    _put_f16(out, 2, mn)
    for j in range(16):
        q0 = min(15, int((x[j] - mn) * inv + np.float32(0.5)))
        q1 = min(15, int((x[16 + j] - mn) * inv + np.float32(0.5)))
        out[4 + j] = q0 | (q1 << 4)


@njit(cache=True, nogil=True, error_model="numpy")
def _put_q5(out, at, q0, q1, j):  # out: [type_size] uint8
    """Q5_0 / Q5_1: low nibbles of quants j and j + 16 into qs[j] (at out[at + 4 + j]), fifth bits into qh."""
    out[at + 4 + j] = (q0 & 15) | ((q1 & 15) << 4)
    out[at + j // 8] |= ((q0 >> 4) & 1) << (j % 8)
    out[at + 2 + j // 8] |= ((q1 >> 4) & 1) << (j % 8)


@njit(cache=True, nogil=True, error_model="numpy")
def _q5_0_block(x, out):  # x: [32] float32, out: [22] uint8
    """quantize_row_q5_0_ref, one block: d = max / -16, q = min(31, (int8_t)(x / d + 16.5))."""
    d = _signed_max(x) / np.float32(-16.0)
    inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
    _put_f16(out, 0, d)
    out[2:6] = 0
    for j in range(16):
        q0 = min(31, int(x[j] * inv + np.float32(16.5)))
        q1 = min(31, int(x[16 + j] * inv + np.float32(16.5)))
        _put_q5(out, 2, q0, q1, j)


@njit(cache=True, nogil=True, error_model="numpy")
def _q5_1_block(x, out):  # x: [32] float32, out: [24] uint8
    """quantize_row_q5_1_ref, one block: d = (max - min) / 31, q = (uint8_t)((x - min) / d + 0.5)."""
    mn, mx = _min_max(x)
    d = (mx - mn) / np.float32(31.0)
    inv = np.float32(1.0) / d if d != 0 else np.float32(0.0)
    _put_f16(out, 0, d)
    _put_f16(out, 2, mn)
    out[4:8] = 0
    for j in range(16):
        q0 = int((x[j] - mn) * inv + np.float32(0.5)) & 0xFF
        q1 = int((x[16 + j] - mn) * inv + np.float32(0.5)) & 0xFF
        _put_q5(out, 4, q0, q1, j)


# ---- K-quant searches (ggml-quants.c make_qkx2_quants, make_qx_quants) ----


@njit(cache=True, nogil=True, error_model="numpy")
def _qkx2_error(x, weights, L, scale, mn):  # x, weights: [n] float32, L: [n] uint8
    """make_qkx2_quants' weighted squared error of quants L under scale and min (use_mad false)."""
    err = np.float32(0.0)
    for i in range(x.shape[0]):
        diff = scale * np.float32(L[i]) + mn - x[i]
        err += weights[i] * (diff * diff)
    return err


@njit(cache=True, nogil=True, error_model="numpy")
def _qkx2_fill(x, weights, L, nmax, iscale, mn):  # x, weights: [n] float32, L: [n] uint8
    """make_qkx2_quants' inner pass: L = clamp(nearest_int(iscale * (x - min))); gives sum_l, sum_l2, sum_xl."""
    sum_l = np.float32(0.0)
    sum_l2 = np.float32(0.0)
    sum_xl = np.float32(0.0)
    for i in range(x.shape[0]):
        l = max(0, min(nmax, nearest_int(iscale * (x[i] - mn))))
        L[i] = l
        w = weights[i]
        fl = np.float32(l)
        sum_l += w * fl
        sum_l2 += w * fl * fl
        sum_xl += w * fl * x[i]
    return sum_l, sum_l2, sum_xl


@njit(cache=True, nogil=True, error_model="numpy")
def make_qkx2_quants(x, weights, L, Laux, nmax, rmin, rdelta, nstep):  # x, weights: [n] f32; L, Laux: [n] u8
    """ggml-quants.c make_qkx2_quants with use_mad false: quants L in 0..nmax; gives (scale, -min)."""
    mn = x[0]
    mx = x[0]
    sum_w = weights[0]
    sum_x = sum_w * x[0]
    for i in range(1, x.shape[0]):
        if x[i] < mn:
            mn = x[i]
        if x[i] > mx:
            mx = x[i]
        sum_w += weights[i]
        sum_x += weights[i] * x[i]
    if mn > 0:
        mn = np.float32(0.0)
    if mx == mn:
        L[:] = 0
        return np.float32(0.0), -mn
    iscale = np.float32(nmax) / (mx - mn)
    scale = np.float32(1.0) / iscale
    _qkx2_fill(x, weights, L, nmax, iscale, mn)
    best_error = _qkx2_error(x, weights, L, scale, mn)
    for step in range(nstep + 1):
        iscale = (rmin + rdelta * np.float32(step) + np.float32(nmax)) / (mx - mn)
        sum_l, sum_l2, sum_xl = _qkx2_fill(x, weights, Laux, nmax, iscale, mn)
        D = sum_w * sum_l2 - sum_l * sum_l
        if D > 0:
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / D
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D
            if this_min > 0:
                this_min = np.float32(0.0)
                this_scale = sum_xl / sum_l2
            cur_error = _qkx2_error(x, weights, Laux, this_scale, this_min)
            if cur_error < best_error:
                L[:] = Laux
                best_error = cur_error
                scale = this_scale
                mn = this_min
    return scale, -mn


@njit(cache=True, nogil=True, error_model="numpy")
def _qx_sums(x, nmax, iscale):  # x: [n] float32
    """make_qx_quants' pass with weights x * x (rmse_type 1): gives sumlx, suml2."""
    sumlx = np.float32(0.0)
    suml2 = np.float32(0.0)
    for i in range(x.shape[0]):
        fl = np.float32(max(-nmax, min(nmax - 1, nearest_int(iscale * x[i]))))
        w = x[i] * x[i]
        sumlx += w * x[i] * fl
        suml2 += w * fl * fl
    return sumlx, suml2


@njit(cache=True, nogil=True, error_model="numpy")
def _qx_fill(x, L, nmax, iscale):  # x: [n] float32, L: [n] uint8
    """make_qx_quants: L = nmax + clamp(nearest_int(iscale * x), -nmax, nmax - 1)."""
    for i in range(x.shape[0]):
        L[i] = nmax + max(-nmax, min(nmax - 1, nearest_int(iscale * x[i])))


@njit(cache=True, nogil=True, error_model="numpy")
def make_qx_quants(x, L, nmax):  # x: [n] float32, L: [n] uint8
    """ggml-quants.c make_qx_quants with rmse_type 1 and no quant weights: quants L in 0..2 nmax - 1; gives scale."""
    mx = np.float32(0.0)
    amax = np.float32(0.0)
    for i in range(x.shape[0]):
        ax = abs(x[i])
        if ax > amax:
            amax = ax
            mx = x[i]
    if amax < np.float32(1e-15):  # GROUP_MAX_EPS
        L[:] = 0
        return np.float32(0.0)
    iscale = np.float32(-nmax) / mx
    _qx_fill(x, L, nmax, iscale)
    sumlx, suml2 = _qx_sums(x, nmax, iscale)
    scale = sumlx / suml2 if suml2 != 0 else np.float32(0.0)
    best = scale * sumlx
    for step in range(-9, 10):
        if step == 0:
            continue
        iscale = -(np.float32(nmax) + np.float32(0.1) * np.float32(step)) / mx
        sumlx, suml2 = _qx_sums(x, nmax, iscale)
        if suml2 > 0 and sumlx * sumlx > best * suml2:
            _qx_fill(x, L, nmax, iscale)
            scale = sumlx / suml2
            best = scale * sumlx
    return scale


# ---- Q4_K, Q5_K (quantize_row_q4_K_ref, quantize_row_q5_K_ref) ----


@njit(cache=True, nogil=True, error_model="numpy")
def _k_runs(x, nmax, rmin, nstep, L, Laux, weights, scales, mins):  # x: [256] f32, L: [256] u8, rest [32]/[8]
    """Each run of 32: weights av_x + |x|, then make_qkx2_quants; gives (max_scale, max_min)."""
    max_scale = np.float32(0.0)
    max_min = np.float32(0.0)
    for j in range(8):
        run = x[32 * j : 32 * j + 32]
        sum_x2 = np.float32(0.0)
        for l in range(32):
            sum_x2 += run[l] * run[l]
        av_x = np.float32(math.sqrt(sum_x2 / np.float32(32.0)))  # sqrtf: double sqrt rounds the same
        for l in range(32):
            weights[l] = av_x + abs(run[l])
        scales[j], mins[j] = make_qkx2_quants(
            run, weights, L[32 * j : 32 * j + 32], Laux, nmax, rmin, np.float32(0.1), nstep
        )
        if scales[j] > max_scale:
            max_scale = scales[j]
        if mins[j] > max_min:
            max_min = mins[j]
    return max_scale, max_min


@njit(cache=True, nogil=True, error_model="numpy")
def _k_scales(out, scales, mins, max_scale, max_min):  # out: [type_size] uint8, scales, mins: [8] float32
    """The 6-bit scales and mins into out[4:16], then d and dmin at out[0:4]; gives the stored d, dmin."""
    inv_scale = np.float32(63.0) / max_scale if max_scale > 0 else np.float32(0.0)
    inv_min = np.float32(63.0) / max_min if max_min > 0 else np.float32(0.0)
    packed = out[4:16]
    for j in range(8):
        ls = min(63, nearest_int(inv_scale * scales[j]) & 0xFF)  # uint8_t, then MIN(63, .)
        lm = min(63, nearest_int(inv_min * mins[j]) & 0xFF)
        if j < 4:
            packed[j] = ls
            packed[j + 4] = lm
        else:
            packed[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
            packed[j - 4] |= (ls >> 4) << 6
            packed[j] |= (lm >> 4) << 6
    d = _put_f16(out, 0, max_scale / np.float32(63.0))
    dmin = _put_f16(out, 2, max_min / np.float32(63.0))
    return d, dmin


@njit(cache=True, nogil=True, error_model="numpy")
def _k_requantize(x, out, d_all, dmin_all, nmax, L):  # x: [256] float32, out: [type_size] u8, L: [256] u8
    """get_scale_min_k4 of each run, then L = clamp(nearest_int((x + dmin * m) / (d * sc))) where d * sc != 0."""
    q = out[4:16]
    for j in range(8):
        if j < 4:
            sc = q[j] & 63
            m = q[j + 4] & 63
        else:
            sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4)
            m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4)
        d = d_all * np.float32(sc)
        if d == 0:
            continue
        dm = dmin_all * np.float32(m)
        for ii in range(32):
            L[32 * j + ii] = max(0, min(nmax, nearest_int((x[32 * j + ii] + dm) / d)))


@njit(cache=True, nogil=True, error_model="numpy")
def _q4_k_block(x, out, L, Laux, weights, scales, mins):  # x: [256] float32, out: [144] uint8
    """quantize_row_q4_K_ref, one block: 8 runs of 32, 4-bit quants."""
    max_scale, max_min = _k_runs(x, 15, np.float32(-1.0), 20, L, Laux, weights, scales, mins)
    out[4:16] = 0
    d, dmin = _k_scales(out, scales, mins, max_scale, max_min)
    _k_requantize(x, out, d, dmin, 15, L)
    for n in range(4):  # qs: runs 2n and 2n + 1 share 32 bytes, low then high nibble
        for l in range(32):
            out[16 + 32 * n + l] = L[64 * n + l] | (L[64 * n + 32 + l] << 4)


@njit(cache=True, nogil=True, error_model="numpy")
def _q5_k_block(x, out, L, Laux, weights, scales, mins):  # x: [256] float32, out: [176] uint8
    """quantize_row_q5_K_ref, one block: Q4_K's layout plus a fifth bit per quant in qh (out[16:48])."""
    max_scale, max_min = _k_runs(x, 31, np.float32(-0.5), 15, L, Laux, weights, scales, mins)
    out[4:16] = 0
    d, dmin = _k_scales(out, scales, mins, max_scale, max_min)
    _k_requantize(x, out, d, dmin, 31, L)
    out[16:48] = 0
    for n in range(4):
        for j in range(32):
            l1 = L[64 * n + j]
            l2 = L[64 * n + 32 + j]
            out[16 + j] |= ((l1 >> 4) << (2 * n)) | ((l2 >> 4) << (2 * n + 1))
            out[48 + 32 * n + j] = (l1 & 15) | ((l2 & 15) << 4)


# ---- Q6_K (quantize_row_q6_K_ref) ----


@njit(cache=True, nogil=True, error_model="numpy")
def _q6_k_block(x, out, L, scales):  # x: [256] float32, out: [210] uint8, L: [256] uint8, scales: [16] f32
    """quantize_row_q6_K_ref, one block: 16 runs of 16, int8 scales, 6-bit quants (ql, qh, scales, d)."""
    max_scale = np.float32(0.0)
    max_abs_scale = np.float32(0.0)
    for ib in range(16):
        scales[ib] = make_qx_quants(x[16 * ib : 16 * ib + 16], L[16 * ib : 16 * ib + 16], 32)
        if abs(scales[ib]) > max_abs_scale:
            max_abs_scale = abs(scales[ib])
            max_scale = scales[ib]
    out[:] = 0
    if max_abs_scale < np.float32(1e-15):  # GROUP_MAX_EPS: an all-zero block
        return
    iscale = np.float32(-128.0) / max_scale
    d_all = _put_f16(out, 208, np.float32(1.0) / iscale)
    for ib in range(16):
        out[192 + ib] = min(127, nearest_int(iscale * scales[ib])) & 0xFF
    for j in range(16):
        sc = out[192 + j]
        d = d_all * np.float32(sc - 256 if sc > 127 else sc)  # the int8_t scale
        if d == 0:
            continue
        for ii in range(16):
            L[16 * j + ii] = 32 + max(-32, min(31, nearest_int(x[16 * j + ii] / d)))
    for half in range(2):  # ql: 64 bytes, qh: 32 bytes per 128 weights
        for l in range(32):
            q1, q2 = L[128 * half + l], L[128 * half + l + 32]
            q3, q4 = L[128 * half + l + 64], L[128 * half + l + 96]
            out[64 * half + l] = (q1 & 15) | ((q3 & 15) << 4)
            out[64 * half + l + 32] = (q2 & 15) | ((q4 & 15) << 4)
            out[128 + 32 * half + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6)


# ---- runs of blocks over numba's threads ----


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _legacy_rows(x, out, kind):  # x: [n, 32] float32, out: [n, type_size] uint8
    """Q8_0 (0), Q4_0 (1), Q4_1 (2), Q5_0 (3) or Q5_1 (4) blocks, jobs of _BLOCKS_PER_JOB over the threads."""
    n = x.shape[0]
    for job in prange((n + _BLOCKS_PER_JOB - 1) // _BLOCKS_PER_JOB):
        for b in range(job * _BLOCKS_PER_JOB, min(n, (job + 1) * _BLOCKS_PER_JOB)):
            if kind == 0:
                _q8_0_block(x[b], out[b])
            elif kind == 1:
                _q4_0_block(x[b], out[b])
            elif kind == 2:
                _q4_1_block(x[b], out[b])
            elif kind == 3:
                _q5_0_block(x[b], out[b])
            else:
                _q5_1_block(x[b], out[b])


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _k_rows(x, out, five_bits):  # x: [n, 256] float32, out: [n, 144 or 176] uint8
    """Q4_K (five_bits false) or Q5_K blocks, jobs of _BLOCKS_PER_JOB over the threads."""
    n = x.shape[0]
    for job in prange((n + _BLOCKS_PER_JOB - 1) // _BLOCKS_PER_JOB):
        L = np.empty(256, np.uint8)
        Laux = np.empty(32, np.uint8)
        weights = np.empty(32, np.float32)
        scales = np.empty(8, np.float32)
        mins = np.empty(8, np.float32)
        for b in range(job * _BLOCKS_PER_JOB, min(n, (job + 1) * _BLOCKS_PER_JOB)):
            if five_bits:
                _q5_k_block(x[b], out[b], L, Laux, weights, scales, mins)
            else:
                _q4_k_block(x[b], out[b], L, Laux, weights, scales, mins)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _q6_k_rows(x, out):  # x: [n, 256] float32, out: [n, 210] uint8
    """Q6_K blocks, jobs of _BLOCKS_PER_JOB over the threads."""
    n = x.shape[0]
    for job in prange((n + _BLOCKS_PER_JOB - 1) // _BLOCKS_PER_JOB):
        L = np.empty(256, np.uint8)
        scales = np.empty(16, np.float32)
        for b in range(job * _BLOCKS_PER_JOB, min(n, (job + 1) * _BLOCKS_PER_JOB)):
            _q6_k_block(x[b], out[b], L, scales)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _f16_rows(x, out):  # x: [n] float32, out: [n] uint16
    """ggml_fp32_to_fp16_row: each value through ggml_compute_fp32_to_fp16."""
    for i in prange(x.shape[0]):
        out[i] = fp32_to_fp16(x[i])


# ---- the TensorType.quantize functions: values [n_blocks, block_size] float32 -> [n_blocks, type_size] uint8 ----


def _blocks(values: np.ndarray, block_size: int) -> np.ndarray:
    """values as a C-contiguous float32 [n_blocks, block_size]."""
    x = np.ascontiguousarray(values, dtype=np.float32)
    if x.size % block_size:
        raise ValueError(f"{x.size} values do not fill blocks of {block_size}")
    return x.reshape(-1, block_size)


def _quantizer(rows: Callable, block_size: int, type_size: int, *flags) -> Callable[[np.ndarray], np.ndarray]:
    """The quantize of a type whose kernel rows(x, out, *flags) fills out's blocks from x's."""
    def quantize(values: np.ndarray) -> np.ndarray:  # values: [n, block_size] float32 -> [n, type_size] uint8
        x = _blocks(values, block_size)
        out = np.zeros((len(x), type_size), np.uint8)
        if len(x):
            rows(x, out, *flags)
        return out

    return quantize


quantize_q8_0 = _quantizer(_legacy_rows, 32, 34, 0)
quantize_q4_0 = _quantizer(_legacy_rows, 32, 18, 1)
quantize_q4_1 = _quantizer(_legacy_rows, 32, 20, 2)
quantize_q5_0 = _quantizer(_legacy_rows, 32, 22, 3)
quantize_q5_1 = _quantizer(_legacy_rows, 32, 24, 4)
quantize_q4_k = _quantizer(_k_rows, 256, 144, False)
quantize_q5_k = _quantizer(_k_rows, 256, 176, True)
quantize_q6_k = _quantizer(_q6_k_rows, 256, 210)


def quantize_f16(values: np.ndarray) -> np.ndarray:  # values: [n, 1] float32 -> [n, 2] uint8
    x = _blocks(values, 1).reshape(-1)
    out = np.empty(len(x), np.uint16)
    if len(x):
        _f16_rows(x, out)
    return out.astype("<u2", copy=False).view(np.uint8).reshape(-1, 2)

