"""Weights on the GPU: each matrix's raw GGUF bytes uploaded once, norms and biases as float32."""

from __future__ import annotations

import cupy
import numpy as np

from kinetic.model.blocks import Weight
from kinetic_cuda.module import kernel
from kinetic_cuda.support import QUANTIZED


class GpuMatrix:
    """A weight matrix [rows, k] as its raw bytes [rows, row_bytes] on the GPU, and its type's kernels."""

    def __init__(self, raw: np.ndarray, type_name: str, k: int):  # raw: [rows, row_bytes] uint8
        self.type = type_name
        self.rows, self.row_bytes = raw.shape
        self.k = k
        self.chunks = k // 32
        self.quantized = self.type in QUANTIZED  # else a float type, taking float32 activations
        self.data = cupy.asarray(np.ascontiguousarray(raw))
        self.matmul = kernel(f"matmul_{self.type}")
        self.embed = kernel(f"embed_{self.type}")

    @staticmethod
    def of(weight: Weight) -> "GpuMatrix":
        return GpuMatrix(weight.raw(), weight.type.name, weight.shape[-1])


def vector(weight: Weight) -> cupy.ndarray:
    """A norm's weights or a bias as float32 on the GPU."""
    return cupy.asarray(np.ascontiguousarray(weight.to_float32().reshape(-1), dtype=np.float32))


def upload_bytes(weights: list[Weight]) -> int:
    """GPU bytes the matrices take, before uploading them."""
    return sum(w.raw().nbytes for w in {w.name: w for w in weights}.values())
