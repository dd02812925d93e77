"""Flywheel (reference docs, Flywheel): a mixture's experts when not all of them fit on the GPU. Each layer keeps a
cache of slots on the GPU; a pass copies the experts it picks that are not in a slot over from system memory,
into the slots used longest ago. Every product is the GPU's experts kernel whatever slot or copy its expert came
from, so an answer has the bits it has with every expert on the GPU.

This module is the bookkeeping (numpy only): which expert each slot holds and which to copy for a pass."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOT_IN_BATCH = -1  # a (row, rank) pair's slot in a batch that does not hold its expert: the kernel skips it


@dataclass(frozen=True)
class Batch:
    """Experts to copy into slots ([(expert, slot)]), then the slot of each (row, rank) pair ([pairs] int32;
    NOT_IN_BATCH for a pair another batch takes)."""

    copies: list[tuple[int, int]]
    slots: np.ndarray


class ExpertSlots:
    """Which expert each of a layer's n_slots GPU slots holds (at first experts 0, 1, ...), and when each was
    last used."""

    def __init__(self, n_expert: int, n_slots: int):
        if not 0 < n_slots <= n_expert:
            raise ValueError(f"a layer of {n_expert} experts cannot have {n_slots} slots")
        self.held = np.arange(n_slots, dtype=np.int64)  # slot -> expert
        self.slot_of = np.full(n_expert, NOT_IN_BATCH, np.int32)  # expert -> slot
        self.slot_of[: n_slots] = np.arange(n_slots)
        self.last_used = np.zeros(n_slots, np.int64)
        self.clock = 0

    @property
    def n_slots(self) -> int:
        return len(self.held)

    def plan(self, ids: np.ndarray) -> list[Batch]:
        """The batches that take every pair of ids ([pairs], the experts the pass picked): the experts already in
        a slot first, then the others in id order, n_slots experts at most a batch."""
        needed = np.unique(ids)
        resident = needed[self.slot_of[needed] >= 0]
        order = np.concatenate([resident, needed[self.slot_of[needed] < 0]])
        return [self._batch(order[at : at + self.n_slots], ids) for at in range(0, len(order), self.n_slots)]

    def _batch(self, experts: np.ndarray, ids: np.ndarray) -> Batch:
        self.clock += 1
        staying = self.slot_of[experts] >= 0
        self.last_used[self.slot_of[experts[staying]]] = self.clock
        free = [int(s) for s in np.argsort(self.last_used, kind="stable") if self.last_used[s] < self.clock]
        copies = []
        for expert, slot in zip(experts[~staying], free):
            self.slot_of[self.held[slot]] = NOT_IN_BATCH
            self.held[slot], self.slot_of[expert], self.last_used[slot] = expert, slot, self.clock
            copies.append((int(expert), slot))
        taken = np.zeros(len(self.slot_of), bool)
        taken[experts] = True
        return Batch(copies, np.where(taken[ids], self.slot_of[ids], NOT_IN_BATCH).astype(np.int32))
