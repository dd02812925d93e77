"""One matrix product, or one embedding lookup, on the GPU, for tests and benchmarks: what every pass runs."""

from __future__ import annotations

import numpy as np

from kinetic_vulkan.adapter import gpu
from kinetic_vulkan.layers import Uploads, embed_steps, products, quantize
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
    ws.set_inputs(np.zeros(len(x)), np.zeros(len(x)), np.zeros(0))
    device.queue.write_buffer(ws.x, 0, np.ascontiguousarray(x, np.float32))
    device.queue.submit([record(device, steps, len(x), 0, [(ws.logits, 4 * len(x) * m.rows)], ws.readback)])
    return ws.read_back((len(x), m.rows))[0]


def embed(weight: np.ndarray, type_name: str, k: int, tokens: np.ndarray, scale: float = 1.0,
          binding_limit: int = 0) -> np.ndarray:
    """[len(tokens), k] float32: the rows of weight ([rows, row_bytes] uint8, raw GGUF bytes of type_name) that
    tokens name, times scale, the matrix in parts of at most binding_limit bytes (0: the device's limit)."""
    device = gpu().device
    limit = binding_limit or gpu().binding_limit
    m = VkMatrix(device, planes_of(weight, type_name), type_name, k, limit)
    ws = Workspace(device, len(tokens), k, 1, 1, 1, 1, 1)
    steps = embed_steps(Uploads(device, limit, 1), ws, m, scale)
    ws.set_inputs(tokens, np.zeros(len(tokens)), np.zeros(0))
    device.queue.submit([record(device, steps, len(tokens), 0, [(ws.x, 4 * len(tokens) * k)], ws.readback)])
    return ws.read_back((len(tokens), k))[0]
