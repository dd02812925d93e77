"""Weights on the GPU: each matrix uploaded once, its quantized blocks in planes (layout.py), split into parts no larger
than a binding; matrices of the types without a shader as float16; norms and biases as float32."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from kinetic.contracts.blocks import Weight
from kinetic_vulkan.layout import planes

NATIVE = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K")  # shaders/quants
FLOATS = ("F32", "F16", "BF16")  # matmul.wgsl's types; the others run matmul_q8.wgsl
PLANE_ALIGN = 16  # bytes: each plane of a part starts on a four-word load (shaders/quants)


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
    """A weight matrix [rows, k] on the GPU in parts of whole rows: (buffer, first row, rows) each, a part's buffer
    holding each plane's rows (layout.planes) one plane after another, each from a PLANE_ALIGN boundary."""

    def __init__(self, device: Any, planes: list[np.ndarray], type_name: str, k: int, binding_limit: int,
                 label: str = "", pieces: Optional[list[int]] = None):
        """planes: [rows, plane bytes a row] uint8 each, as planes_of gives them; pieces: the rows of each weight it
        stacks."""
        self.rows, self.k, self.type = planes[0].shape[0], k, type_name
        self.row_words = planes[0].shape[1] // 4  # a float type's one plane: matmul.wgsl's ROW_WORDS
        self.pieces = pieces or [self.rows]
        row_bytes = sum(p.shape[1] for p in planes)
        per_part = max(1, (binding_limit - PLANE_ALIGN * len(planes)) // row_bytes)
        self.parts = [(storage(device, _part(planes, first, per_part), f"{label}[{first}:]"), first,
                       min(per_part, self.rows - first)) for first in range(0, self.rows, per_part)]

    @staticmethod
    def of(device: Any, weights: list[Weight], binding_limit: int) -> "VkMatrix":
        """The weights' rows one after another (matrices of one type and row length, as stackable() says)."""
        type_name = gpu_type(weights[0])
        each = [planes_of(w.raw() if type_name == w.type.name else w.to_float32(), type_name) for w in weights]
        planes = [np.concatenate(plane) for plane in zip(*each)] if len(each) > 1 else each[0]
        return VkMatrix(device, planes, type_name, weights[0].shape[-1], binding_limit,
                        "+".join(w.key for w in weights), [w.shape[0] for w in weights])


def _part(planes: list[np.ndarray], first: int, rows: int) -> np.ndarray:
    """The bytes of a part's buffer: rows first .. first + rows of each plane, each padded to PLANE_ALIGN."""
    pieces = []
    for plane in planes:
        piece = plane[first : first + rows].reshape(-1)
        pieces += [piece, np.zeros(-piece.size % PLANE_ALIGN, np.uint8)]
    return np.concatenate(pieces)


def gpu_type(weight: Weight) -> str:
    """The type the GPU keeps weight in: its own where a shader has it, else float16."""
    return weight.type.name if weight.type.name in NATIVE else "F16"


def stackable(weights: list[Weight]) -> bool:
    """Whether the matrices can be one: the same type on the GPU and the same row length."""
    return len({(gpu_type(w), w.shape[-1]) for w in weights}) == 1


def planes_of(data: np.ndarray, type_name: str) -> list[np.ndarray]:
    """A matrix's planes ([rows, bytes a row] uint8 each) for the GPU: raw GGUF bytes [rows, row bytes] of a
    quantized NATIVE type as layout.planes lays them out; a float matrix [rows, k] (or a float type's raw bytes) as
    float16 or its own type's words, one plane."""
    if type_name in FLOATS:
        values = data if data.dtype == np.uint8 else data.astype(np.float16).view(np.uint8)
        return [np.ascontiguousarray(values.reshape(data.shape[0], -1))]
    return planes(data, type_name)
