"""The one thread that runs the CPU device's parallel kernels, whichever thread asks.

libgomp keeps a pool of OpenMP threads for every thread that starts a parallel region, and once its pools
hold more threads than the machine has cores it throttles their spin to a few iterations before they
sleep, so every region pays to wake them. A server runs passes from threads of its own (Convoy's, or one
per request taking turns) beside the main thread that loaded the model: each of those made a pool, and a
decode step ran a third slower than from the main thread. All of a runner's work goes to this one thread
instead, so the process keeps one pool.

numba's thread count is per thread: each call sets the count the runner was made with.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Optional, TypeVar

import numba

T = TypeVar("T")

_home: Optional[tuple[ThreadPoolExecutor, threading.Thread]] = None  # made at the first call
_making = threading.Lock()


def at_home(threads: int, work: Callable[..., T], *args) -> T:
    """work(*args) on the home thread with `threads` numba threads; its result, or its exception raised here."""
    pool, thread = _home or _make_home()
    if threading.current_thread() is thread:
        return _with_threads(threads, work, *args)
    return pool.submit(_with_threads, threads, work, *args).result()


def _make_home() -> tuple[ThreadPoolExecutor, threading.Thread]:
    global _home
    with _making:
        if _home is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix="kinetic-cpu")
            _home = pool, pool.submit(threading.current_thread).result()
    return _home


def _forget_home() -> None:
    """A forked child has no copy of the home thread: it makes its own."""
    global _home
    _home = None


def _with_threads(threads: int, work: Callable[..., T], *args) -> T:
    numba.set_num_threads(threads)
    return work(*args)


os.register_at_fork(after_in_child=_forget_home)
