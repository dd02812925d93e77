"""LFM2's short convolution (contracts.blocks.ShortConv) over a sequence's kept rows."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, parallel=True)
def convolve(kept, positions, weights):
    """Row i, channel c: the sum over j of weights[c, j] * kept[p - width + 1 + j, c], p = positions[i], rows before
    position 0 counting as 0; in float64, the oldest position first, so a row's sum never depends on the batch.
    The rows are shared among numba's threads; each runs along a row's channels in vector registers."""
    # kept: [context, d] float32; positions: [n] int64; weights: [d, width] float32 -> [n, d] float32
    n, d, width = positions.size, kept.shape[1], weights.shape[1]
    taps = np.ascontiguousarray(weights.T).astype(np.float64)  # [width, d]
    out = np.empty((n, d), np.float32)
    for i in numba.prange(n):
        first = positions[i] - width + 1
        total = np.zeros(d)
        for j in range(max(0, -first), width):
            row, tap = kept[first + j], taps[j]
            for c in range(d):
                total[c] += np.float64(row[c]) * tap[c]
        out[i] = total
    return out
