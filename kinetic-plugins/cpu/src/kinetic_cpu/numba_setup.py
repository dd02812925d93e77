"""numba's environment for the kernels, set before numba loads.

Compiled kernels live under the user cache, in a folder named by the kernels' source: numba checks a
cached function against its own file only, not against the files of the functions it calls (nor those of
the jobs kernels/shares.py runs), so naming the folder by a hash of every kernel source file (kernels/ and
ops.py) makes any edit start a fresh cache.

Several processes share that cache (a server and a run started together on a fresh machine), which numba
does not guard: lock_cache makes them compile one at a time and save its indexes one at a time.

OpenMP threads spin for a bounded while (GOMP_SPINCOUNT) after a parallel call before they sleep: a decode
step makes many parallel calls in quick succession, and waking a sleeping thread for each costs a large
share of a small model's decoding time. The bound keeps an idle engine off the CPU: unbounded active waits
slow every call down on a machine whose other processes keep its cores busy.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from pathlib import Path
from typing import Iterator

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


@contextlib.contextmanager
def flocked(path: str) -> Iterator[None]:
    """An exclusive flock on the file at path (made if missing), held for the block; none where there is no
    flock (Windows)."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    with open(path, "a") as lock:  # closing it releases the flock
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def lock_cache() -> None:
    """Make the processes sharing the cache compile one at a time, and save its indexes one at a time, each
    under an flock on a file in the cache folder.

    Two processes compiling at once left kernels in the cache that compute the wrong values: two compiling
    Q5_0 and Q4_K, and Q8_0 and Q6_K, left a Q8_0 product giving NaN to every later process, for good.
    A process holds the compile lock from the start of its outermost compilation (numba announces each,
    "numba:compile") to its end. numba's own lock makes a process compile on one thread at a time, so the
    count of compilations under way needs no lock of its own.

    An index save reads a function's index, adds its entry and writes the index back, then its data file.
    Without the save lock, two processes saving one function's specializations at once each write an index
    that misses the other's entry, or name one data file for both."""
    if sys.platform == "win32":  # no flock there: numba's own behaviour stays
        return
    import fcntl

    from numba.core import caching, event

    save = caching.IndexDataCacheFile.save
    if getattr(save, "locked", False):
        return

    def locked_save(self, key, data):
        with flocked(os.path.join(self._cache_path, ".index-lock")):
            save(self, key, data)

    locked_save.locked = True
    caching.IndexDataCacheFile.save = locked_save

    class OneAtATime(event.Listener):
        def __init__(self) -> None:
            self.depth = 0  # compilations under way in this process, nested ones counted
            self.lock = None  # the open lock file, while this process compiles

        def on_start(self, ev: event.Event) -> None:
            if self.depth == 0:
                folder = os.environ["NUMBA_CACHE_DIR"]
                os.makedirs(folder, exist_ok=True)
                self.lock = open(os.path.join(folder, ".compile-lock"), "a")
                fcntl.flock(self.lock, fcntl.LOCK_EX)
            self.depth += 1

        def on_end(self, ev: event.Event) -> None:
            self.depth -= 1
            if self.depth == 0:
                self.lock.close()
                self.lock = None

    event.register("numba:compile", OneAtATime())
