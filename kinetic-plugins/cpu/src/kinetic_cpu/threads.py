"""How many threads the CPU kernels use: -t, else every core."""

from __future__ import annotations

import os
from typing import Optional

from kinetic.errors import KineticError


def thread_count(threads: Optional[int]) -> int:
    """-t (at most the threads numba started with), else every core; the runner's passes take it (home.py)."""
    import numba

    chosen = threads or os.cpu_count() or 1
    if chosen < 1:
        raise KineticError(f"-t {threads}: give at least 1 thread")
    return min(chosen, numba.config.NUMBA_NUM_THREADS)
