"""The served model's slots: each holds a sequence on the device and what it last held. A request takes a
free slot (the one whose tokens share the longest start with its prompt); when none is free it waits, first
come first served."""

from __future__ import annotations

import collections
import threading
from typing import Callable, Optional, Sequence

from kinetic.contracts.device import DeviceSequence
from kinetic.contracts.drafting import Drafter
from kinetic.contracts.prompt_states import common_prefix
from kinetic.server.metrics import Slot

POLL = 0.25  # seconds between checks that a waiting client is still there


class ServedSlot:
    """seq: the slot's sequence; cached: the tokens it holds; drafter: its own (None: no drafting);
    report: what /slots shows of it."""

    def __init__(self, index: int, seq: DeviceSequence, drafter: Optional[Drafter]):
        self.index = index
        self.seq = seq
        self.drafter = drafter
        self.cached: list[int] = []
        self.report = Slot(id=index, speculative=drafter is not None)

    def remember(self, tokens: list[int]) -> None:
        """After an answer: the context it ended with; seq holds its start, which the next request reuses."""
        self.cached = tokens[: self.seq.n_tokens]

    def forget(self) -> None:
        """After a failed answer: what seq holds is unknown, so the next request starts from nothing."""
        self.seq.truncate(0)
        self.cached = []

    def shared_start(self, tokens: Sequence[int]) -> int:
        return common_prefix(self.cached, tokens, limit=len(tokens))


class SlotPool:
    """acquire() queues the caller and returns a slot once it is first in line and one is free."""

    def __init__(self, slots: list[ServedSlot]):
        self.slots = slots
        self._free = list(slots)
        self._cond = threading.Condition()
        self._queue: collections.deque[object] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> int:
        return len(self.slots) - len(self._free)

    def acquire(self, prompt: Sequence[int], cancelled: Callable[[], bool]) -> Optional[ServedSlot]:
        """A free slot for prompt; None (and out of the queue) when cancelled() turns true first."""
        me = object()
        with self._cond:
            self._queue.append(me)
            while not self._free or self._queue[0] is not me:
                if cancelled():
                    self._queue.remove(me)
                    self._cond.notify_all()
                    return None
                self._cond.wait(POLL)
            self._queue.popleft()
            self._cond.notify_all()
            return self._take(prompt)

    def take_free(self, prompt: Sequence[int]) -> Optional[ServedSlot]:
        """A free slot for prompt if one is free and nobody waits for one; else None, at once."""
        with self._cond:
            return None if self._queue or not self._free else self._take(prompt)

    def _take(self, prompt: Sequence[int]) -> ServedSlot:
        slot = max(self._free, key=lambda free: free.shared_start(prompt))
        self._free.remove(slot)
        return slot

    def release(self, slot: ServedSlot) -> None:
        with self._cond:
            self._free.append(slot)
            self._free.sort(key=lambda free: free.index)
            self._cond.notify_all()
