"""The one thread that runs the CPU device's parallel kernels, whichever thread asks.

libgomp keeps a pool of OpenMP threads for every thread that starts a parallel region, and once its pools
hold more threads than the machine has cores it throttles their spin to a few iterations before they
sleep, so every region pays to wake them. A server runs passes from threads of its own (Convoy's, or one
per request taking turns) beside the main thread that loaded the model: each of those made a pool, and a
Qwen 0.5B decode step ran a third slower than from the main thread (27 against 40 t/s, 2 cores). All of a
runner's work goes to this one thread instead, so the process keeps one pool.

numba's thread count is per thread: each call sets the count the runner was made with.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

import numba

T = TypeVar("T")

_POOL = ThreadPoolExecutor(1, thread_name_prefix="kinetic-cpu")
_HOME = _POOL.submit(threading.current_thread).result()


def at_home(threads: int, work: Callable[..., T], *args) -> T:
    """work(*args) on the home thread with `threads` numba threads; its result, or its exception raised here."""
    if threading.current_thread() is _HOME:
        return _with_threads(threads, work, *args)
    return _POOL.submit(_with_threads, threads, work, *args).result()


def _with_threads(threads: int, work: Callable[..., T], *args) -> T:
    numba.set_num_threads(threads)
    return work(*args)
