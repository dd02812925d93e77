"""How many threads the CPU kernels use: -t, else every core."""

from __future__ import annotations

import os
from typing import Optional

from kinetic.errors import KineticError


def use_threads(threads: Optional[int]) -> int:
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    chosen = threads or os.cpu_count() or 1
    if chosen < 1:
        raise KineticError(f"-t {threads}: give at least 1 thread")
    numba.set_num_threads(min(chosen, available))
    return min(chosen, available)
