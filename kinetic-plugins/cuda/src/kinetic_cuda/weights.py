"""Weights on the GPU: each matrix's raw GGUF bytes uploaded once, norms and biases as float32."""

from __future__ import annotations

from typing import Optional

import cupy
import numpy as np

from kinetic.contracts.blocks import Weight
from kinetic_cuda.gpu import multiprocessors
from kinetic_cuda.module import kernel
from kinetic_cuda.support import QUANTIZED

MATVEC_CHUNKS = 512  # chunks of 32 weights a matvec thread block takes (matmul.cu), over whole rows
STAGED_BYTES = 32768  # of its rows' bytes, staged in shared memory
TILE = 8  # tokens a matvec thread block takes
X_STAGED = 16384  # bytes of int8 activations a matvec thread block stages, when they fit
DEFAULT_SHARED = 48 * 1024  # dynamic shared memory a kernel may take without asking
PAD = 16  # bytes past a matrix's last row: the mma copies a row's bytes in 16-byte units from a 16-byte boundary
MMA_STEP, MMA_ROWS, MMA_TOKENS = 8, 64, 64  # chunks a step, rows and tokens of a matmul.cu mma thread block
MMA_THREADS = 4 * (MMA_ROWS // 32) * (MMA_TOKENS // 32) * 32  # a warp for each chunk class and 32 x 32 tile
ALIGNED = {"Q6_K": (210, 224)}  # blocks padded on upload to a multiple of 16 bytes (quants.cuh), and their sizes


class GpuMatrix:
    """A weight matrix [rows, k] as its raw bytes [rows, row_bytes] on the GPU (blocks of ALIGNED's types padded),
    and its type's kernels."""

    def __init__(self, raw: np.ndarray, type_name: str, k: int, held: Optional[int] = None):
        """raw: [rows, GGUF row bytes] uint8; held: the rows it keeps on the GPU (the first; all when None)."""
        self.type = type_name
        self.rows = raw.shape[0]
        kept = aligned(raw[: self.rows if held is None else held], type_name)
        self.row_bytes = kept.shape[1]
        self.k = k
        self.chunks = k // 32
        self.quantized = self.type in QUANTIZED  # else a float type, taking float32 activations
        self.data = cupy.zeros(kept.size + PAD, cupy.uint8)
        self.data[: kept.size].set(np.ascontiguousarray(kept).reshape(-1))
        # rows a thread block takes: at most rows / multiprocessors, so a small matrix still has a block for each
        self.per = max(1, min(16, MATVEC_CHUNKS // self.chunks, STAGED_BYTES // self.row_bytes,
                              self.rows // multiprocessors()))
        self.matvec = kernel(f"matvec_{self.type}")
        most = max(self.shared_bytes(n) for n in range(1, TILE + 1))
        if most > DEFAULT_SHARED:
            self.matvec.max_dynamic_shared_size_bytes = max(most, self.matvec.max_dynamic_shared_size_bytes)
        # prompts, on int8 tensor cores: of one matrix, and of a stack of experts' (ops.grouped_expert_products)
        self.mma = kernel(f"mma_{self.type}") if self.quantized else None
        self.mma_experts = kernel(f"mma_experts_{self.type}") if self.quantized else None
        for mma in (self.mma, self.mma_experts) if self.quantized else ():
            mma.max_dynamic_shared_size_bytes = max(self.mma_shared_bytes(), mma.max_dynamic_shared_size_bytes)
        self.embed = kernel(f"embed_{self.type}")
        self.experts = kernel(f"experts_{self.type}")  # a stack of experts' matrices (ops.expert_products)
        if self.experts_shared_bytes() > DEFAULT_SHARED:
            self.experts.max_dynamic_shared_size_bytes = max(self.experts_shared_bytes(),
                                                             self.experts.max_dynamic_shared_size_bytes)

    def shared_bytes(self, n: int) -> int:
        """Dynamic shared memory of a matvec launch for n tokens (matmul.cu's matvec): two buffers of rows."""
        tile = min(n, TILE)
        x = 40 * tile * self.chunks
        return 2 * _up16(self.per * self.row_bytes) + _up16(4 * tile * self.per * (self.chunks | 1)) + \
            (x if self.quantized and x <= X_STAGED else 0)

    def experts_shared_bytes(self) -> int:
        """Dynamic shared memory of an experts launch (matmul.cu's experts): a group's rows and their values."""
        return _up16(self.per * self.row_bytes) + 4 * self.per * (self.chunks | 1)

    def mma_shared_bytes(self) -> int:
        """Dynamic shared memory of an mma launch (matmul.cu's MmaShared): three stages, each of a step's raw bytes
        of every row (from the 16-byte boundary below them) and the int8 activations, and two decoded steps."""
        row = ((MMA_STEP * self.row_bytes // self.chunks + 15) // 16 + 1) * 16
        stage = MMA_ROWS * row + MMA_STEP * MMA_TOKENS * (32 + 4 + 4)
        return 3 * stage + 2 * MMA_STEP * MMA_ROWS * (32 + 16)

    @staticmethod
    def of(weight: Weight, held: Optional[int] = None) -> "GpuMatrix":
        return GpuMatrix(weight.raw(), weight.type.name, weight.shape[-1], held)


def aligned_bytes(weight: Weight) -> int:
    """The bytes of weight's matrix on the GPU, its blocks padded as ALIGNED says."""
    size, aligned = ALIGNED.get(weight.type.name, (1, 1))
    return weight.raw().nbytes // size * aligned


def aligned(raw: np.ndarray, type_name: str) -> np.ndarray:
    """raw [rows, row bytes] with each block of an ALIGNED type padded with zeros to its aligned size."""
    if type_name not in ALIGNED:
        return raw
    size, aligned = ALIGNED[type_name]
    blocks = raw.reshape(raw.shape[0], -1, size)
    return np.pad(blocks, ((0, 0), (0, 0), (0, aligned - size))).reshape(raw.shape[0], -1)


def _up16(size: int) -> int:
    return (size + 15) // 16 * 16


def vector(weight: Weight) -> cupy.ndarray:
    """A norm's weights or a bias as float32 on the GPU."""
    return cupy.asarray(np.ascontiguousarray(weight.to_float32().reshape(-1), dtype=np.float32))


def upload_bytes(weights: list[Weight]) -> int:
    """GPU bytes the matrices take, before uploading them."""
    return sum(aligned_bytes(w) + PAD for w in {w.key: w for w in weights}.values())
