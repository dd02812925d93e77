"""How many requests the server runs at once (--parallel, llama.cpp's -np): what the user says, else as many
full-context sequences as fit, up to four: on the CPU in half the available memory, on a GPU in its free
memory (the runner's sequences_that_fit)."""

from __future__ import annotations

from typing import Optional

from kinetic.engine.embedding import pooling_of
from kinetic.engine.session import Session
from kinetic.model.footprint import cache_bytes
from kinetic.system import memory

MOST_BY_DEFAULT = 4
CPU_CACHE_BYTES = 2  # the CPU keeps keys and values as float16 (or as q8_0, about half that)


def slots_for(session: Session, parallel: Optional[int]) -> int:
    """The number of slots: one where requests cannot share passes (Convoy off) or for an embedding model (its
    texts take turns on a sequence of their own), else parallel or the default."""
    if not session.shared_passes or pooling_of(session) is not None:
        return 1
    if parallel is not None:
        return parallel
    if session.device.name != "cpu":
        return max(1, min(MOST_BY_DEFAULT, session.runner.sequences_that_fit()))
    _, available = memory()
    if available is None:
        return 1
    return max(1, min(MOST_BY_DEFAULT, available // 2 // sequence_bytes(session)))


def sequence_bytes(session: Session) -> int:
    """The keys and values of one full-context sequence on the CPU."""
    return cache_bytes(session.model, session.context_length, CPU_CACHE_BYTES)
