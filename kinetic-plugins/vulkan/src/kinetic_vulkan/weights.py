"""Weights on the GPU: each matrix's raw GGUF bytes uploaded once, its blocks padded to whole words (the shaders read
words), split into parts no larger than a binding; matrices of the types without a shader as float16; norms and
biases as float32."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from kinetic.contracts.blocks import Weight

NATIVE = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K")  # shaders/quants
FLOATS = ("F32", "F16", "BF16")  # matmul.wgsl's types; the others run matmul_q8.wgsl
# blocks whose words the shaders read padded with 2 bytes: (block bytes, where the padding goes), so that every
# block and its quants start on a word
PADDED = {"Q8_0": (34, 2), "Q4_0": (18, 2), "Q5_0": (22, 2), "Q6_K": (210, 210)}


def storage(device: Any, data: np.ndarray, label: str = ""):
    """A storage buffer holding data's bytes (at least 4)."""
    import wgpu

    raw = np.ascontiguousarray(data).view(np.uint8).reshape(-1)
    if raw.size < 4:
        raw = np.pad(raw, (0, 4 - raw.size))
    return device.create_buffer_with_data(label=label, data=raw, usage=wgpu.BufferUsage.STORAGE)


def vector(device: Any, weight: Optional[Weight]):
    """A norm's weights or a bias as float32 on the GPU; None for None."""
    if weight is None:
        return None
    return storage(device, weight.to_float32().reshape(-1).astype(np.float32), weight.key)


class VkMatrix:
    """A weight matrix [rows, k] on the GPU in parts of whole rows: (buffer, first row, rows) each."""

    def __init__(self, device: Any, words: np.ndarray, type_name: str, k: int, binding_limit: int, label: str = "",
                 pieces: Optional[list[int]] = None):
        """words: [rows, row words] uint32, as words_of gives them; pieces: the rows of each weight it stacks."""
        self.rows, self.k, self.type, self.row_words = words.shape[0], k, type_name, words.shape[1]
        self.pieces = pieces or [self.rows]
        per_part = max(1, binding_limit // (4 * self.row_words))
        self.parts = [(storage(device, words[first : first + per_part], f"{label}[{first}:]"), first,
                       min(per_part, self.rows - first)) for first in range(0, self.rows, per_part)]

    @staticmethod
    def of(device: Any, weights: list[Weight], binding_limit: int) -> "VkMatrix":
        """The weights' rows one after another (matrices of one type and row length, as stackable() says)."""
        type_name = gpu_type(weights[0])
        words = np.concatenate([_words(w, type_name) for w in weights]) if len(weights) > 1 else \
            _words(weights[0], type_name)
        return VkMatrix(device, words, type_name, weights[0].shape[-1], binding_limit, "+".join(w.key for w in weights),
                        [w.shape[0] for w in weights])


def gpu_type(weight: Weight) -> str:
    """The type the GPU keeps weight in: its own where a shader has it, else float16."""
    return weight.type.name if weight.type.name in NATIVE else "F16"


def stackable(weights: list[Weight]) -> bool:
    """Whether the matrices can be one: the same type on the GPU and the same row length."""
    return len({(gpu_type(w), w.shape[-1]) for w in weights}) == 1


def _words(weight: Weight, type_name: str) -> np.ndarray:
    if type_name != weight.type.name:
        return weight.to_float32().astype(np.float16).view(np.uint32).reshape(weight.shape[0], -1)
    return padded_words(weight.raw(), type_name)


def padded_words(raw: np.ndarray, type_name: str) -> np.ndarray:
    """[rows, row words] uint32: raw GGUF bytes [rows, row bytes] of a NATIVE type, each block padded as PADDED
    says."""
    if type_name in PADDED:
        size, at = PADDED[type_name]
        blocks = raw.reshape(raw.shape[0], -1, size)
        padding = np.zeros((*blocks.shape[:2], 2), np.uint8)
        raw = np.concatenate([blocks[..., :at], padding, blocks[..., at:]], axis=2).reshape(raw.shape[0], -1)
    return np.ascontiguousarray(raw).view(np.uint32)

