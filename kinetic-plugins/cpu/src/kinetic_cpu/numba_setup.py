"""numba's environment for the kernels, set before numba loads.

Compiled kernels live under the user cache, in a folder named by the kernels' source: numba checks a
cached function against its own file only, not against the files of the functions it calls, so naming the
folder by a hash of every kernel source file makes any edit start a fresh cache.

OpenMP threads spin for a bounded while (GOMP_SPINCOUNT) after a parallel call before they sleep: a decode
step makes ~100 parallel calls a few microseconds apart, and waking a sleeping thread cost ~80 us a call
on this project's 2-vCPU Xeon VM (Gemma 3 270M tg128 31.7 t/s with passive waits, 45 to 48 with a spin
count of 3,000 to 300,000). The bound keeps an idle engine off the CPU: unbounded active waits cost 2.5 to
8 ms a call on a 2-vCPU machine whose other processes kept it busy.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from kinetic.paths import cache_dir

_KERNELS = Path(__file__).resolve().parent / "kernels"
SPIN_COUNT = 10_000  # libgomp spin iterations before a waiting thread sleeps


def source_hash() -> str:
    """A short hash of every kernel source file's name and bytes."""
    digest = hashlib.sha256()
    for path in sorted(_KERNELS.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_numba() -> None:
    """Set NUMBA_CACHE_DIR to ~/.cache/kinetic/numba/<source hash> and GOMP_SPINCOUNT to SPIN_COUNT,
    unless the user set them (an OMP_WAIT_POLICY of the user's overrides the spin count)."""
    os.environ.setdefault("GOMP_SPINCOUNT", str(SPIN_COUNT))
    folder = os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir("numba", source_hash())))
    if "numba" in sys.modules:  # numba read its config already; kernels not yet decorated still see this
        from numba.core import config

        config.CACHE_DIR = folder
