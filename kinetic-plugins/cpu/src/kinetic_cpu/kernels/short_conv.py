"""LFM2's short convolution (contracts.blocks.ShortConv) over a sequence's kept rows."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def convolve(kept, positions, weights):
    """Row i, channel c: the sum over j of weights[c, j] * kept[p - width + 1 + j, c], p = positions[i], rows before
    position 0 counting as 0; in float64, the oldest position first, so a row's sum never depends on the batch."""
    # kept: [context, d] float32; positions: [n] int64; weights: [d, width] float32 -> [n, d] float32
    n, d, width = positions.size, kept.shape[1], weights.shape[1]
    out = np.empty((n, d), np.float32)
    for i in range(n):
        first = positions[i] - width + 1
        for c in range(d):
            total = 0.0
            for j in range(max(0, -first), width):
                total += np.float64(kept[first + j, c]) * np.float64(weights[c, j])
            out[i, c] = total
    return out
