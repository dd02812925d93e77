"""What every device applies for a Rope: each pair's position multiplier and the rotated values' factor.

Pair k of a head turns by position * pair_scales[k] * base^(-2k / n_dims) / freq_factor_k, and its two values
come out multiplied by magnitude(rope). Without YaRN every pair's multiplier is rope.scale. With YaRN
(docs/rotary.md) the fast-turning pairs keep their trained frequency, the slow ones are scaled in full and a
linear ramp joins them, as ggml's rope applies it (ggml-cpu/ops.cpp, rope_yarn).
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from kinetic.contracts.blocks import Rope, Yarn


def pair_scales(rope: Rope) -> np.ndarray:
    """[n_dims / 2] float64: the number each pair's angle is multiplied by."""
    half = rope.n_dims // 2
    if rope.yarn is None:
        return np.full(half, rope.scale)
    low, high = _ramp_ends(rope.yarn, rope.n_dims, rope.base)
    extrapolated = 1.0 - np.clip((np.arange(half) - low) / max(0.001, high - low), 0.0, 1.0)
    return rope.scale * (1.0 - extrapolated) + extrapolated


def magnitude(rope: Rope) -> float:
    """The factor of the rotated values: attn_factor, and with YaRN and a context stretched by s = 1 / scale
    also 1 + 0.1 ln s (llama.cpp: llama-context.cpp cancels and restores it the same way)."""
    stretch = 1.0 / rope.scale
    if rope.yarn is None or stretch <= 1.0:
        return rope.attn_factor
    return rope.attn_factor * (1.0 + 0.1 * math.log(stretch))


def angle_table(rope: Rope, freq_factors: Optional[np.ndarray], context: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [context, n_dims / 2] float64 of each position's pair angles, times magnitude(rope), for a
    device that looks them up; freq_factors: the rope's [n_dims / 2] divisors, or None."""
    half = rope.n_dims // 2
    factors = freq_factors.astype(np.float64) if freq_factors is not None else np.ones(half)
    inverse = rope.base ** (-2.0 * np.arange(half) / rope.n_dims)
    positions = np.arange(context, dtype=np.float64)[:, None]
    angles = positions * pair_scales(rope)[None, :] * inverse[None, :] / factors[None, :]
    return np.cos(angles) * magnitude(rope), np.sin(angles) * magnitude(rope)


def _ramp_ends(yarn: Yarn, n_dims: int, base: float) -> tuple[float, float]:
    """The pairs where the ramp starts and ends: pair k turns original_context / (2 pi base^(2k / n_dims)) times
    over the trained context, which is beta at k = n_dims ln(context / (2 pi beta)) / (2 ln base)."""
    def pair_turning(beta: float) -> float:
        return n_dims * math.log(yarn.original_context / (beta * 2 * math.pi)) / (2 * math.log(base))
    return max(0.0, math.floor(pair_turning(yarn.beta_fast))), min(n_dims - 1.0, math.ceil(pair_turning(yarn.beta_slow)))
