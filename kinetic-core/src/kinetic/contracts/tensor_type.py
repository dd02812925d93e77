"""A GGUF weight type, defined once by its reference dequantization."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

# blocks: [n_blocks, type_size] uint8 -> [n_blocks, block_size] float32
Dequantize = Callable[[np.ndarray], np.ndarray]
# values: [n_blocks, block_size] float32 -> [n_blocks, type_size] uint8
Quantize = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class TensorType:
    """One ggml tensor type: its GGUF id, its name, and how a block of it decodes."""

    id: int
    name: str
    block_size: int  # weights per block
    type_size: int  # bytes per block
    dequantize: Dequantize
    quantize: Optional[Quantize] = None

    def nbytes(self, n_weights: int) -> int:
        """Bytes that n_weights of this type take; n_weights must fill whole blocks."""
        return n_weights // self.block_size * self.type_size

    def to_float32(self, raw: np.ndarray, n_weights: int) -> np.ndarray:
        """Dequantize the first n_weights stored in raw (uint8 bytes) to a flat float32 array."""
        n_blocks = n_weights // self.block_size
        blocks = np.asarray(raw, dtype=np.uint8)[: n_blocks * self.type_size].reshape(n_blocks, self.type_size)
        return self.dequantize(blocks).reshape(-1)
