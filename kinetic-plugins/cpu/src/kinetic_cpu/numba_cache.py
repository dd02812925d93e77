"""Where numba keeps compiled kernels: under the user cache, in a folder named by the kernels' source.

numba checks a cached function against its own file only, not against the files of the functions it
calls; naming the folder by a hash of every kernel source file makes any edit start a fresh cache.
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


def use_kinetic_cache() -> None:
    """Set NUMBA_CACHE_DIR (unless the user set it) to ~/.cache/kinetic/numba/<source hash>."""
    folder = os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir("numba", source_hash())))
    if "numba" in sys.modules:  # numba read its config already; kernels not yet decorated still see this
        from numba.core import config

        config.CACHE_DIR = folder
