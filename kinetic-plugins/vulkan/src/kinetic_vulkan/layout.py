"""The quantized types' GGUF blocks laid out for the GPU as planes: every 32-weight chunk's quants in 16 bytes of
nibbles (or Q8_0's 32 int8), so that a lane reads its chunk's quants in one four-word load beside its neighbours'
chunks, then the fifth or sixth bits, scales and minimums each in a plane of their own. The planes hold the blocks'
bits, rearranged, in the same bytes (Q8_0, Q4_0 and Q5_0 lose the padding their words needed); shaders/quants/*.wgsl
read them. Nibbles of a chunk: byte i holds weight i in its low four bits and weight 16 + i in its high four, as
ggml's Q4_0 keeps them.
"""

from __future__ import annotations

import numpy as np

BLOCK_BYTES = {"Q8_0": 34, "Q4_0": 18, "Q4_1": 20, "Q5_0": 22, "Q5_1": 24, "Q4_K": 144, "Q5_K": 176, "Q6_K": 210}
# the 32-weight blocks' fields before their quants, by the byte each ends at: d (or d and m), then Q5's fifth bits
# (bit i: weight i); their planes come after the quants' in the opposite order
FIELDS = {"Q8_0": (2,), "Q4_0": (2,), "Q4_1": (4,), "Q5_0": (2, 6), "Q5_1": (4, 8)}


def planes(raw: np.ndarray, type_name: str) -> list[np.ndarray]:
    """[rows, plane bytes a row] uint8 for each plane, in the order the type's shader reads them: raw GGUF bytes
    [rows, row bytes] of a quantized NATIVE type."""
    blocks = raw.reshape(raw.shape[0], -1, BLOCK_BYTES[type_name])  # [rows, blocks, block bytes]
    if type_name in FIELDS:
        ends = FIELDS[type_name]
        fields = [blocks[..., start:end] for start, end in zip((0, *ends), ends)]
        each = [blocks[..., ends[-1]:], *reversed(fields)]
    else:
        each = _SUPER_BLOCKS[type_name](blocks)
    return [np.ascontiguousarray(p.reshape(raw.shape[0], -1)) for p in each]


def _q4_k(b: np.ndarray) -> list[np.ndarray]:
    """Nibbles; each super-block's 16-byte head (d, dmin, the 12 bytes of 6-bit scales and mins)."""
    return [_nibbles(_k_low(b[..., 16:])), b[..., :16]]


def _q5_k(b: np.ndarray) -> list[np.ndarray]:
    """Nibbles; each chunk's fifth bits as a word (bit i: weight i); the heads."""
    qh = b[..., 16:48]  # bit j of byte i: the fifth bit of weight i of chunk j
    bits = (qh[..., None, :] >> np.arange(8, dtype=np.uint8)[:, None]) & 1  # [rows, blocks, chunk, weight]
    return [_nibbles(_k_low(b[..., 48:])), np.packbits(bits, axis=-1, bitorder="little"), b[..., :16]]


def _k_low(qs: np.ndarray) -> np.ndarray:
    """[rows, blocks, 8, 32] the 4-bit values of Q4_K's and Q5_K's chunks: 32 bytes of qs hold chunk 2p's in their
    low nibbles and chunk 2p + 1's in their high nibbles."""
    groups = qs.reshape(*qs.shape[:-1], 4, 1, 32)
    return np.concatenate([groups & 0x0F, groups >> 4], axis=-2).reshape(*qs.shape[:-1], 8, 32)


def _q6_k(b: np.ndarray) -> list[np.ndarray]:
    """Nibbles of the low four bits; each chunk's high two bits in two words (_crumbs); the int8 scales (two a chunk);
    each super-block's d."""
    ql = b[..., :128].reshape(*b.shape[:-1], 2, 2, 32)  # [half, l < 32 or not, l % 32]
    qh = b[..., 128:192].reshape(*b.shape[:-1], 2, 1, 32)
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=-2)  # chunk 4 half + quarter: quarters l, l + 32, then high nibbles
    high = (qh >> (2 * np.arange(4, dtype=np.uint8))[:, None]) & 3
    shape = (*b.shape[:-1], 8, 32)
    return [_nibbles(low.reshape(shape)), _crumbs(high.reshape(shape)), b[..., 192:208], b[..., 208:210]]


def _nibbles(values: np.ndarray) -> np.ndarray:
    """[..., 16] bytes of a chunk's 32 4-bit values [..., 32]: byte i holds value i low and value 16 + i high."""
    return (values[..., :16] | (values[..., 16:] << 4)).astype(np.uint8)


def _crumbs(values: np.ndarray) -> np.ndarray:
    """[..., 8] bytes of a chunk's 32 2-bit values [..., 32]: word a, byte b holds value 16 a + 4 k + b at bits 2k
    (k < 4), so that shifting the word by 2k and masking each byte gives values 16 a + 4 k .. + 3."""
    v = values.reshape(*values.shape[:-1], 2, 4, 4).astype(np.uint8)  # [word a, k, byte b]
    return (v[..., 0, :] | (v[..., 1, :] << 2) | (v[..., 2, :] << 4) | (v[..., 3, :] << 6)).reshape(
        *values.shape[:-1], 8)


_SUPER_BLOCKS = {"Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k}
