"""LFM2's short convolution (contracts.blocks.ShortConv) over a sequence's kept rows."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, parallel=True)
def convolve(kept, positions, weights):
    """Row i: convolve_row at position positions[i]. The rows are shared among numba's threads."""
    # kept: [context, d] float32; positions: [n] int64; weights: [d, width] float32 -> [n, d] float32
    taps = np.ascontiguousarray(weights.T)  # [width, d]
    out = np.empty((positions.size, kept.shape[1]), np.float32)
    for i in numba.prange(positions.size):
        convolve_row(kept, positions[i], taps, out[i])
    return out


@numba.njit(cache=True, nogil=True)
def convolve_row(kept, p, taps, out):
    """out[c] = the sum over j of taps[j, c] * kept[p - width + 1 + j, c], rows before position 0 counting as 0; in
    float64, the oldest position first, so a row's sum never depends on the batch. It runs along the channels in
    vector registers."""
    # kept: [context, d] float32; taps: [width, d] float32; out: [d] float32
    d, width = kept.shape[1], taps.shape[0]
    first = p - width + 1
    total = np.zeros(d)
    for j in range(max(0, -first), width):
        row, tap = kept[first + j], taps[j]
        for c in range(d):
            total[c] += np.float64(row[c]) * np.float64(tap[c])
    for c in range(d):
        out[c] = total[c]
