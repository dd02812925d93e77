"""Which cache positions a row attends to, for every device: a causal row sees up to its own position, within
the last `window` where the block has a sliding window; a bidirectional row (an encoder's) sees its whole text,
or within window // 2 on either side (llama.cpp's symmetric window, LLAMA_SWA_TYPE_SYMMETRIC)."""

from __future__ import annotations

from typing import Optional

import numpy as np


def visible_spans(positions: np.ndarray, window: Optional[int], causal: bool,
                  end: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first and last visible position, [n] int64 each; positions: [n] int64, the rows'; end: the last
    position of the rows' sequence (a bidirectional row's text ends there)."""
    positions = np.asarray(positions, np.int64)
    if causal:
        lasts = positions
        firsts = np.maximum(0, positions - window + 1) if window else np.zeros_like(positions)
    elif window:
        half = window // 2
        firsts, lasts = np.maximum(0, positions - half), np.minimum(end, positions + half)
    else:
        firsts, lasts = np.zeros_like(positions), np.full_like(positions, end)
    return firsts, lasts
