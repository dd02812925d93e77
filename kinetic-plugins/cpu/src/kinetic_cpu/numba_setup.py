"""numba's environment for the kernels, set before numba loads.

Compiled kernels live under the user cache, in a folder named by the kernels' source: numba checks a
cached function against its own file only, not against the files of the functions it calls (nor those of
the jobs kernels/shares.py runs), so naming the folder by a hash of every kernel source file (kernels/ and
ops.py) makes any edit start a fresh cache.

Kernels compiled by several processes at once (two servers started together on a fresh machine) share that
cache: lock_index_saves makes numba's index saves one at a time, as numba itself does not.

OpenMP threads spin for a bounded while (GOMP_SPINCOUNT) after a parallel call before they sleep: a decode
step makes many parallel calls in quick succession, and waking a sleeping thread for each costs a large
share of a small model's decoding time. The bound keeps an idle engine off the CPU: unbounded active waits
slow every call down on a machine whose other processes keep its cores busy.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from kinetic.paths import cache_dir

_PACKAGE = Path(__file__).resolve().parent
SPIN_COUNT = 10_000  # libgomp spin iterations before a waiting thread sleeps


def source_hash() -> str:
    """A short hash of every kernel source file's name and bytes."""
    digest = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("kernels/*.py")) + [_PACKAGE / "ops.py"]:
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


def lock_index_saves() -> None:
    """Make numba's cache index saves (numba.core.caching.IndexDataCacheFile.save) one at a time across
    processes, under an flock on a file beside the index. A save reads a function's index, adds its entry and
    writes the index back, then its data file: without the lock, two processes saving one function's
    specializations at once each write an index the other's entry is missing from, or name one data file for
    both, so a later load can find the other specialization's code under its key."""
    if sys.platform == "win32":  # no flock there: numba's own behaviour stays
        return
    import fcntl

    from numba.core import caching

    save = caching.IndexDataCacheFile.save
    if getattr(save, "locked", False):
        return

    def locked_save(self, key, data):
        with open(os.path.join(self._cache_path, ".index-lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            save(self, key, data)

    locked_save.locked = True
    caching.IndexDataCacheFile.save = locked_save
