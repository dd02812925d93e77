"""Pieces the block decoders share: chunked decoding, reading fields out of byte columns."""

from __future__ import annotations

from typing import Callable

import numpy as np

from kinetic.contracts.tensor_type import Dequantize

# Weights decoded per step: bounds the temporaries (512 KB of float32) and keeps numpy's per-call cost small.
_CHUNK_WEIGHTS = 1 << 17


def _quiet() -> np.errstate:
    """An inf or NaN scale decodes to inf or NaN weights, as in ggml; numpy's warnings about it are noise."""
    return np.errstate(over="ignore", invalid="ignore")


def chunked(decode: Callable[[np.ndarray], np.ndarray], block_size: int) -> Dequantize:
    """A dequantize that runs decode over bounded runs of blocks, filling one output array."""
    step = max(1, _CHUNK_WEIGHTS // block_size)

    def dequantize(blocks: np.ndarray) -> np.ndarray:  # blocks: [n_blocks, type_size] uint8
        blocks = np.ascontiguousarray(blocks, dtype=np.uint8)
        out = np.empty((len(blocks), block_size), np.float32)
        with _quiet():
            for start in range(0, len(blocks), step):
                part = blocks[start : start + step]
                out[start : start + len(part)] = decode(part).reshape(len(part), block_size)
        return out

    return dequantize


def elementwise(dtype: str) -> Dequantize:
    """The dequantize of a type that stores each weight as one little-endian `dtype` value."""

    def dequantize(blocks: np.ndarray) -> np.ndarray:  # blocks: [n, itemsize] uint8
        with _quiet():
            return np.ascontiguousarray(blocks, dtype=np.uint8).view(dtype).astype(np.float32)

    return dequantize


def f16_at(blocks: np.ndarray, at: int) -> np.ndarray:  # blocks: [n, type_size] uint8
    """The little-endian f16 at byte `at` of each block, as float32 [n, 1]."""
    return blocks[:, at : at + 2].view("<f2").astype(np.float32)


def fields(packed: np.ndarray, bits: int, run: int) -> np.ndarray:  # packed: [n, m] uint8
    """Split each byte into 8 // bits fields, lowest bits first, in ggml's order: within each run of
    `run` bytes, field 0 of every byte, then field 1 of every byte, and so on. -> [n, m * 8 // bits] uint8"""
    if bits == 1 and run == 1:
        return np.unpackbits(packed, axis=1, bitorder="little")
    n, m = packed.shape
    packed = np.ascontiguousarray(packed)  # whole-array shifts on contiguous bytes, then one interleaving copy
    mask = np.uint8((1 << bits) - 1)
    split = [((packed >> np.uint8(shift)) & mask).reshape(n, m // run, 1, run) for shift in range(0, 8, bits)]
    return np.concatenate(split, axis=2).reshape(n, -1)


def k4_scales_mins(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # blocks: [n, type_size] uint8
    """Q4_K/Q5_K: f16 d and dmin, then eight 6-bit scales and mins packed into 12 bytes; gives, per run of
    32 weights, d * scale and dmin * min, each [n, 8, 1] float32."""
    low, mid, high = blocks[:, 4:8], blocks[:, 8:12], blocks[:, 12:16]
    scales = np.concatenate([low & np.uint8(63), (high & np.uint8(15)) | (low >> 6 << 4)], axis=1)
    mins = np.concatenate([mid & np.uint8(63), (high >> 4) | (mid >> 6 << 4)], axis=1)
    return (f16_at(blocks, 0) * scales)[:, :, None], (f16_at(blocks, 2) * mins)[:, :, None]


def ksign_indices(words: np.ndarray) -> np.ndarray:  # words: [...] uint32 -> [..., 4]
    """The four 7-bit ksigns indices in the low 28 bits of each word (IQ2_XXS, IQ3_XXS)."""
    return (words[..., None] >> np.array([0, 7, 14, 21], np.uint32)) & np.uint32(127)
