"""Kernels compiled aside (docs/speed.md, "The first load"). Where numba's cache lacks the kernels of an exact
speed technology (Torque, Shortlist), another process compiles them while this one compiles and runs the
kernels every pass needs, so the first answer waits only for the latter. The runner starts the technology at
its first pass after they are in the cache; the passes before it ran without it, bit for bit the same.

The other process compiles into a folder of its own, then adds each compiled entry to this process's cache
folder under numba_setup.lock_cache's index lock: two processes compiling into one folder at once left wrong
kernels there (numba_setup.lock_cache), while adding finished entries is what one process saving does. A
file in the cache folder then marks the job done, so later processes start the technology at once.

    python -m kinetic_cpu.aside CACHE_FOLDER JOB [ARG...]   (what Aside runs)
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, Optional

NICE = 10  # the compiling process yields the CPU to the one answering


class Aside:
    """A job's kernels (JOBS[job[0]](*job[1:])) in numba's cache: ready() says whether they are, the first time
    they are not starting another process that compiles them."""

    def __init__(self, job: tuple[str, ...]):
        self.job = job
        self._folder = Path(os.environ["NUMBA_CACHE_DIR"])
        self._process: Optional[subprocess.Popen] = None

    def ready(self, wait: bool = False) -> bool:
        """Whether the kernels are in the cache, or the process compiling them ended without putting them there
        (then whoever calls them compiles them, as without Aside); wait: until one of these."""
        if _marker(self._folder, self.job).exists():
            return True
        if self._process is None:
            self._process = _start(self._folder, self.job)
        if wait:
            self._process.wait()
        return self._process.poll() is not None


def _marker(folder: Path, job: tuple[str, ...]) -> Path:
    return folder / "aside" / "-".join(job)


def _start(folder: Path, job: tuple[str, ...]) -> subprocess.Popen:
    """The process compiling job's kernels into a folder of its own, then into `folder`; what it writes goes to
    a log beside the job's marker."""
    own = tempfile.mkdtemp(prefix="kinetic-aside-")
    env = {**os.environ, "NUMBA_CACHE_DIR": own}
    log = _marker(folder, job).with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as written:
        return subprocess.Popen([sys.executable, "-m", __name__, str(folder), *job], env=env,
                                stdin=subprocess.DEVNULL, stdout=written, stderr=subprocess.STDOUT,
                                preexec_fn=_yielding if hasattr(os, "nice") else None)


def _yielding() -> None:
    os.nice(NICE)


def _torque(count: str, gelu: str, recurrent: str) -> None:
    from kinetic_cpu.torque_tables import compiled_code

    compiled_code(int(count), bool(int(gelu)), bool(int(recurrent)))


def _shortlist() -> None:
    from kinetic_cpu.shortlist import compile_kernels

    compile_kernels()


JOBS = {"torque": _torque, "shortlist": _shortlist}


def merge(own: Path, folder: Path) -> None:
    """Every entry of the cache in `own` that the cache in `folder` lacks, added to it by numba's own save."""
    import numba
    from numba.core.caching import IndexDataCacheFile

    for index in own.rglob("*.nbi"):
        with index.open("rb") as f:
            if pickle.load(f) != numba.__version__:
                continue
            stamp, overloads = pickle.loads(f.read())
        base, place = index.name.removesuffix(".nbi"), folder / index.parent.relative_to(own)
        place.mkdir(parents=True, exist_ok=True)
        source = IndexDataCacheFile(str(index.parent), base, stamp)
        target = IndexDataCacheFile(str(place), base, stamp)
        for key, name in overloads.items():
            if key not in target._load_index():
                target.save(key, source._load_data(name))


def main(argv: list[str]) -> int:
    folder, job = Path(argv[0]), tuple(argv[1:])
    own = Path(os.environ["NUMBA_CACHE_DIR"])
    marker = _marker(folder, job)
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _one_at_a_time(marker):  # another process may be compiling the job already
            if not marker.exists():
                from kinetic_cpu.numba_setup import lock_cache

                lock_cache()
                JOBS[job[0]](*job[1:])
                merge(own, folder)
                marker.touch()
    finally:
        shutil.rmtree(own, ignore_errors=True)
    return 0


@contextlib.contextmanager
def _one_at_a_time(marker: Path) -> Iterator[None]:
    """An flock on a file beside the marker, held for the block (none where there is no flock)."""
    if sys.platform == "win32":
        yield
        return
    import fcntl

    with open(marker.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
