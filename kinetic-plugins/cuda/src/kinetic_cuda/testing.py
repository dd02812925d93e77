"""One matrix product on the GPU, for tests and benchmarks: what every pass runs for each weight."""

from __future__ import annotations

import cupy
import numpy as np

from kinetic_cuda import ops
from kinetic_cuda.weights import GpuMatrix
from kinetic_cuda.workspace import Activations


def matmul(weight: np.ndarray, type_name: str, k: int, x: np.ndarray) -> np.ndarray:
    """[n, rows] float32: x ([n, k] float32) times each row of weight ([rows, row_bytes] uint8, raw GGUF bytes of
    type_name). Row t is bit for bit what x[t:t + 1] alone gives."""
    m = GpuMatrix(np.ascontiguousarray(weight), type_name, k)
    gx = cupy.asarray(np.ascontiguousarray(x, dtype=np.float32))
    acts = Activations(len(x), k)
    out = cupy.empty((len(x), m.rows), cupy.float32)
    if m.quantized:
        ops.quantize(acts, gx, len(x))
    ops.matmul([(m, out, None)], acts, gx, len(x))
    return out.get()
