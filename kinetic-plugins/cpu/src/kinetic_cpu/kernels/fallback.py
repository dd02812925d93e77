"""Every other weight type: rows dequantized a chunk at a time by the type's reference numpy
dequantize, then taken against float32 activations by the exact F32 kernel."""

from __future__ import annotations

import numpy as np

from kinetic.contracts import TensorType

from kinetic_cpu.kernels.blocks import as_blocks
from kinetic_cpu.kernels.driver import PAD, rows

CHUNK_BYTES = 1 << 22  # float32 bytes dequantized at a time


def dequantizing_matmul(weight: np.ndarray, tensor_type: TensorType, f32: TensorType, x: np.ndarray) -> np.ndarray:
    """weight: [rows, row_bytes] uint8 of tensor_type; x: [n, k] float32 -> [n, rows] float32."""
    n, k = x.shape
    out = np.empty((n, weight.shape[0]), np.float32)
    acc = np.empty((n + PAD, 8), np.float32)
    step = max(1, CHUNK_BYTES // (4 * k))
    for r0 in range(0, weight.shape[0], step):
        part = np.ascontiguousarray(weight[r0 : r0 + step])
        floats = tensor_type.dequantize(part.reshape(-1, tensor_type.type_size)).reshape(len(part), k)
        part_out = np.empty((n, len(part)), np.float32)
        rows(as_blocks(floats.view(np.uint8), f32), 0, len(part), (x,), acc, part_out)
        out[:, r0 : r0 + len(part)] = part_out
    return out
