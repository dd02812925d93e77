"""The served model runs one request at a time; waiting requests queue, first come first served."""

from __future__ import annotations

import collections
import threading
from typing import Callable

POLL = 0.25  # seconds between checks that a waiting client is still there


class Turns:
    """A fair lock: acquire() queues the caller and returns once it is first and the model is free."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: collections.deque[object] = collections.deque()
        self._busy = False

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> bool:
        return self._busy

    def acquire(self, cancelled: Callable[[], bool]) -> bool:
        """Wait for the model; False (and out of the queue) when cancelled() turns true first."""
        me = object()
        with self._cond:
            self._queue.append(me)
            while self._busy or self._queue[0] is not me:
                if cancelled():
                    self._queue.remove(me)
                    self._cond.notify_all()
                    return False
                self._cond.wait(POLL)
            self._queue.popleft()
            self._busy = True
            return True

    def release(self) -> None:
        with self._cond:
            self._busy = False
            self._cond.notify_all()
