"""The time this process has spent compiling kernels: numba announces a "numba:compile" event only for a
kernel it does not find in its on-disk cache, so the clock runs only while kernels really compile. Importing
it also makes the processes that share the cache compile and save one at a time (numba_setup.lock_cache),
before the runner compiles anything."""

from __future__ import annotations

from numba.core import event

from kinetic.progress import CompileClock
from kinetic_cpu.numba_setup import lock_cache

CLOCK = CompileClock("compiling CPU kernels, once, about half a minute")


class _Listener(event.Listener):
    def on_start(self, ev: event.Event) -> None:
        CLOCK.begin()

    def on_end(self, ev: event.Event) -> None:
        CLOCK.end()


event.register("numba:compile", _Listener())
lock_cache()
