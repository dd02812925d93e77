"""Flywheel's bookkeeping (kinetic_cuda.flywheel, numpy only): each batch's copies leave every pair it takes
reading its own expert's slot, every pair is taken by exactly one batch, and experts already in a slot are not
copied again. The GPU side runs in test_cuda_device's Flywheel tests."""

from __future__ import annotations

import numpy as np
import pytest

from kinetic_cuda.flywheel import NOT_IN_BATCH, ExpertSlots


def replay(slots: ExpertSlots, held: np.ndarray, ids: np.ndarray) -> tuple[int, np.ndarray]:
    """Apply each batch's copies to held (slot -> expert, as the GPU would hold them) and check its pairs;
    -> (copies made, how many batches took each pair)."""
    copies, taken = 0, np.zeros(len(ids), int)
    for batch in slots.plan(ids):
        for expert, slot in batch.copies:
            held[slot] = expert
        copies += len(batch.copies)
        mine = batch.slots != NOT_IN_BATCH
        assert (held[batch.slots[mine]] == ids[mine]).all()
        assert len(np.unique(ids[mine])) <= slots.n_slots
        taken += mine
    assert (held == slots.held).all()
    return copies, taken


@pytest.mark.parametrize("n_expert,n_slots,n_used,rows", [(8, 2, 2, 1), (128, 40, 8, 1), (128, 40, 8, 64),
                                                         (64, 64, 4, 16), (32, 7, 7, 5)])
def test_every_pair_reads_its_expert_once(n_expert, n_slots, n_used, rows):
    rng = np.random.default_rng(n_expert * 1000 + n_slots)
    slots = ExpertSlots(n_expert, n_slots)
    held = np.arange(n_slots)  # the GPU starts with experts 0, 1, ...
    for _ in range(20):
        ids = np.concatenate([rng.choice(n_expert, n_used, replace=False) for _ in range(rows)])
        _, taken = replay(slots, held, ids)
        assert (taken == 1).all()


def test_experts_in_slots_are_not_copied_and_the_least_recent_go_first():
    slots = ExpertSlots(n_expert=6, n_slots=3)
    held = np.arange(3)
    assert replay(slots, held, np.array([0, 2]))[0] == 0
    assert replay(slots, held, np.array([2, 4]))[0] == 1  # into slot 1, unused since the start
    assert slots.held.tolist() == [0, 4, 2]
    assert replay(slots, held, np.array([5, 4]))[0] == 1  # slot 0's expert was used before slot 2's
    assert slots.held.tolist() == [5, 4, 2]
    assert replay(slots, held, np.array([5, 4, 2]))[0] == 0


def test_more_experts_than_slots_take_several_batches():
    slots = ExpertSlots(n_expert=10, n_slots=2)
    batches = slots.plan(np.array([9, 0, 1, 7, 3]))
    assert [b.copies for b in batches] == [[], [(3, 0), (7, 1)], [(9, 0)]]  # 0 and 1 first: they are in slots
    assert [b.slots.tolist() for b in batches] == [[-1, 0, 1, -1, -1], [-1, -1, -1, 1, 0], [0, -1, -1, -1, -1]]


def test_a_layer_needs_a_slot():
    with pytest.raises(ValueError):
        ExpertSlots(n_expert=4, n_slots=0)
