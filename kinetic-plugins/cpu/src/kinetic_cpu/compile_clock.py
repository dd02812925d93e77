"""The time this process has spent compiling kernels: numba announces a "numba:compile" event only for a
kernel it does not find in its on-disk cache, so the clock runs only while kernels really compile. A kernel
compiled inside another's compilation counts once, within the outer one."""

from __future__ import annotations

import threading
import time

from numba.core import event


class CompileClock(event.Listener):
    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = threading.local()

    def on_start(self, ev: event.Event) -> None:
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            self._depth.started = time.perf_counter()
        self._depth.n = depth + 1

    def on_end(self, ev: event.Event) -> None:
        self._depth.n -= 1
        if self._depth.n == 0:
            self.seconds += time.perf_counter() - self._depth.started


CLOCK = CompileClock()
event.register("numba:compile", CLOCK)
