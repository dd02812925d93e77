"""A layer's experts under Flywheel (flywheel.py): their matrices' slots on the GPU, every expert's bytes in system
memory, and the copies between them on the pass's stream."""

from __future__ import annotations

from typing import Iterator, Optional

import cupy
import numpy as np

from kinetic.contracts.blocks import Experts, Weight
from kinetic_cuda.flywheel import ExpertSlots
from kinetic_cuda.weights import GpuMatrix, aligned


class ExpertCache:
    """The gate, up and down matrices of an Experts block, n_slots experts of each on the GPU. pinned: every
    expert's bytes copied into page-locked memory (copies then run at the bus's speed), else read from the
    memory-mapped file when first copied."""

    def __init__(self, block: Experts, n_slots: int, pinned: bool):
        self.slots = ExpertSlots(block.n_expert, n_slots)
        self.matrices: list[GpuMatrix] = []
        self._hosts: list[np.ndarray] = []  # each matrix's bytes, [n_expert * expert bytes] uint8
        for weight in (block.gate, block.up, block.down):
            rows = weight.shape[1]  # an expert's
            self.matrices.append(GpuMatrix.of(weight, held=n_slots * rows))
            self._hosts.append(_host_bytes(weight, pinned))
        self._sizes = [len(host) // block.n_expert for host in self._hosts]

    def copy(self, copies: list[tuple[int, int]]) -> None:
        """Each (expert, slot): the expert's matrices into the slot, queued on the current stream."""
        stream = cupy.cuda.get_current_stream()
        for matrix, host, size in zip(self.matrices, self._hosts, self._sizes):
            for expert, slot in copies:
                matrix.data[slot * size : (slot + 1) * size].set(host[expert * size : (expert + 1) * size], stream)

    def batches(self, ids: cupy.ndarray, picked: Optional[np.ndarray]) -> Iterator[None]:
        """For each batch of the experts picked ([pairs], a host copy of ids'), its copies queued and ids holding
        its slots; once, ids unchanged, when picked is None (every expert on the GPU)."""
        if picked is None:
            yield
            return
        stream = cupy.cuda.get_current_stream()
        for batch in self.slots.plan(picked):
            self.copy(batch.copies)
            ids[: len(picked)].set(batch.slots, stream)
            yield


def _host_bytes(weight: Weight, pinned: bool) -> np.ndarray:
    """weight's bytes as the GPU holds them ([size] uint8): in page-locked memory, or the file's own where they
    need no padding."""
    raw = aligned(weight.raw(), weight.type.name)
    if not pinned:
        return raw.reshape(-1)
    host = np.frombuffer(cupy.cuda.alloc_pinned_memory(raw.nbytes), np.uint8, raw.nbytes)
    host[:] = raw.reshape(-1)
    return host
