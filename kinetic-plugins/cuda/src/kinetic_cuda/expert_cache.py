"""A layer's experts under Flywheel (flywheel.py): their matrices' slots on the GPU, every expert's bytes in system
memory, and the copies between them on the pass's stream."""

from __future__ import annotations

from typing import Callable, Iterator, Optional

import cupy
import numpy as np

from kinetic.contracts.blocks import Experts, Weight
from kinetic_cuda.flywheel import ExpertSlots
from kinetic_cuda.weights import GpuMatrix, aligned


class ExpertCache:
    """The gate, up and down matrices of an Experts block, n_slots experts of each on the GPU, with their biases
    where the block has them. pinned: every expert's bytes copied into page-locked memory at load (copies then run
    at the bus's speed), else read from the memory-mapped file as they are copied (blocks padded then, where the
    GPU pads them)."""

    def __init__(self, block: Experts, n_slots: int, pinned: bool):
        self.slots = ExpertSlots(block.n_expert, n_slots)
        self.matrices: list[GpuMatrix] = []
        self._experts: list[Callable[[int], np.ndarray]] = []  # expert -> its bytes as the GPU holds them
        for weight in (block.gate, block.up, block.down):  # each [n_expert, rows, k]
            self.matrices.append(GpuMatrix.of(weight, held=n_slots * weight.shape[1]))
            self._experts.append(_expert_bytes(weight, pinned))
        # every expert's biases, [n_expert, rows] float32 in system memory, and the slots' ([n_slots * rows]; slot
        # s holds expert s at first, as ExpertSlots starts)
        self._biases = [None if w is None else w.to_float32().reshape(block.n_expert, -1)
                        for w in (block.gate_bias, block.up_bias, block.down_bias)]
        self.biases = tuple(None if b is None else cupy.asarray(np.ascontiguousarray(b[:n_slots]).reshape(-1))
                            for b in self._biases)

    def copy(self, copies: list[tuple[int, int]]) -> None:
        """Each (expert, slot): the expert's matrices and biases into the slot, queued on the current stream."""
        stream = cupy.cuda.get_current_stream()
        for matrix, expert_bytes in zip(self.matrices, self._experts):
            for expert, slot in copies:
                host = expert_bytes(expert)
                matrix.data[slot * host.size : (slot + 1) * host.size].set(host, stream)
        for slots, every in zip(self.biases, self._biases):
            for expert, slot in copies if slots is not None else ():
                width = every.shape[1]
                slots[slot * width : (slot + 1) * width].set(every[expert], stream)

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


def _expert_bytes(weight: Weight, pinned: bool) -> Callable[[int], np.ndarray]:
    """expert -> its rows' bytes ([size] uint8) as the GPU holds them: views of one page-locked copy of the
    whole matrix, or each expert's rows of the file, padded (a copy) where the type's blocks are."""
    raw, type_name = weight.raw(), weight.type.name
    n_expert, rows = weight.shape[0], weight.shape[1]

    def of_file(expert: int) -> np.ndarray:
        return aligned(raw[expert * rows : (expert + 1) * rows], type_name).reshape(-1)

    if not pinned:
        return of_file
    size = of_file(0).nbytes
    memory = cupy.cuda.PinnedMemory(n_expert * size)  # not the pool's, which rounds up to a power of two
    host = np.frombuffer(cupy.cuda.PinnedMemoryPointer(memory, 0), np.uint8, n_expert * size)
    for expert in range(n_expert):  # an expert at a time: no second copy of the whole matrix
        host[expert * size : (expert + 1) * size] = of_file(expert)
    return lambda expert: host[expert * size : (expert + 1) * size]
