"""numba's environment for the kernels, set before numba loads.

Compiled kernels live under the user cache, in a folder named by the kernels' source: numba checks a
cached function against its own file only, not against the files of the functions it calls, so naming the
folder by a hash of every kernel source file makes any edit start a fresh cache.

OpenMP threads wait passively between parallel calls. Measured on this project's 2-vCPU machine while other
processes kept it busy: an empty two-thread call took 13 us at best either way, but with active (spinning)
waits most calls took 2.5 to 8 ms, a spinning thread holding the core its partner needs.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from kinetic.paths import cache_dir

_KERNELS = Path(__file__).resolve().parent / "kernels"


def source_hash() -> str:
    """A short hash of every kernel source file's name and bytes."""
    digest = hashlib.sha256()
    for path in sorted(_KERNELS.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def prepare_numba() -> None:
    """Set NUMBA_CACHE_DIR to ~/.cache/kinetic/numba/<source hash> and OMP_WAIT_POLICY to PASSIVE, unless
    the user set them."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    folder = os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir("numba", source_hash())))
    if "numba" in sys.modules:  # numba read its config already; kernels not yet decorated still see this
        from numba.core import config

        config.CACHE_DIR = folder
