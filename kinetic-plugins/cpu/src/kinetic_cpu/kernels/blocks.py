"""Raw weight bytes seen as blocks: [rows, row_bytes] uint8 -> [rows, blocks] of a one-field record per
block, the field named by the type. The record type tells the compiled driver which kernel to use."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kinetic.contracts import TensorType


@lru_cache(maxsize=None)
def block_dtype(name: str, type_size: int) -> np.dtype:
    return np.dtype([(name, np.uint8, (type_size,))])


def as_blocks(weight: np.ndarray, tensor_type: TensorType, suffix: str = "") -> np.ndarray:  # weight: [rows, row_bytes] uint8
    """A read-only zero-copy view of weight as [rows, row_bytes / type_size] blocks, their record named by the type
    and a suffix saying how the bytes are laid out, if not as the file has them."""
    blocks = np.ascontiguousarray(weight).view(block_dtype(tensor_type.name + suffix, tensor_type.type_size))
    blocks.flags.writeable = False  # one compiled specialization whether the bytes are a file map or not
    return blocks
