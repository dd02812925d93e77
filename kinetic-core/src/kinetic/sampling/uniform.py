"""The counter-based uniform stream: u = uniform(seed, index, stream), a pure function with no generator state.

Token i's draw depends only on (seed, i), never on how many draws came before, so a
speculative verifier can recompute any token's draw on its own (docs/exactness.md, section 4).
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1

PICK_STREAM = 0  # the final pick of token i
XTC_STREAM = 1  # XTC's coin for token i


def _splitmix64(value: int) -> int:
    """One step of splitmix64 (Steele, Lea, Flood 2014): a bijective 64-bit mix with good avalanche."""
    z = (value + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def uniform(seed: int, index: int, stream: int = PICK_STREAM) -> float:
    """A float64 in [0, 1) for draw `index` of `stream` under `seed`: 53 random bits, exact multiples of 2**-53."""
    mixed = _splitmix64(_splitmix64(_splitmix64(seed & MASK64) ^ (stream & MASK64)) ^ (index & MASK64))
    return (mixed >> 11) * 2.0**-53
