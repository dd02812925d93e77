"""One matrix product on the GPU, for tests and benchmarks: what every pass runs for each weight."""

from __future__ import annotations

import numpy as np

from kinetic_vulkan.adapter import gpu
from kinetic_vulkan.layers import Uploads, products, quantize
from kinetic_vulkan.plan import Workspace, record
from kinetic_vulkan.weights import VkMatrix, planes_of


def matmul(weight: np.ndarray, type_name: str, k: int, x: np.ndarray, binding_limit: int = 0) -> np.ndarray:
    """[n, rows] float32: x ([n, k] float32, n up to 64) times each row of weight ([rows, row_bytes] uint8, raw GGUF
    bytes of type_name), the matrix in parts of at most binding_limit bytes (0: the device's limit). Row t is bit
    for bit what x[t:t + 1] alone gives."""
    device = gpu().device
    limit = binding_limit or gpu().binding_limit
    m = VkMatrix(device, planes_of(weight, type_name), type_name, k, limit)
    ws = Workspace(device, len(x), k, 1, 1, 1, m.rows, 1)
    up = Uploads(device, limit, 1)
    steps = quantize(up, ws, ws.x, k, [m]) + products(up, ws, ws.x, m, ws.logits, m.rows)
    ws.set_inputs(x, np.zeros(len(x)), np.zeros(0))
    device.queue.submit([record(device, steps, len(x), 0, [(ws.logits, 4 * len(x) * m.rows)], ws.readback)])
    return ws.read_back((len(x), m.rows))[0]
