"""Kernels compiled aside (docs/speed.md, "The first load"): on a machine whose numba cache lacks them, another
process compiles kernels while this one compiles and runs others, so the first answer waits for fewer.

- Whole jobs, an exact speed technology's kernels (Torque, Shortlist): the runner starts the technology at its
  first pass after they are in the cache (Aside); the passes before it ran without it, bit for bit the same.
- Split jobs, the products of each weight type (Pipeline): this process compiles the first type a pass reads
  and the kernels between products (norms, attention) as it runs them; the other compiles the other types in
  the order the pass reads them, and this one waits for each type's mark before its first product of it.

The other process compiles into a folder of its own, then adds each compiled entry to this process's cache
folder under numba_setup.lock_cache's index lock: two processes compiling into one folder at once left wrong
kernels there (numba_setup.lock_cache), while adding finished entries is what one process saving does. Each
job, or part of a split job, then leaves a mark in the cache folder's `aside` folder (with an flock file that
says which process has it), so that later processes do not start it again; the process leaves its log there.

    python -m kinetic_cpu.aside CACHE_FOLDER JOB [ARG...]   (what Aside and Pipeline run)
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Protocol

from kinetic_cpu.numba_setup import flocked, lock_cache

NICE = 10  # a whole job's process yields the CPU to the one answering
POLL = 0.02  # seconds between looks for a part's mark


class Waitable(Protocol):
    def ready(self, wait: bool) -> bool:
        """Whether the kernels are in numba's cache, or the process compiling them ended without putting them
        there (then whoever calls them compiles them, as without it); wait: until one of these."""


class Aside:
    """A whole job's kernels (JOBS[job[0]](*job[1:])), compiled by another process where numba's cache lacks them;
    a Waitable."""

    def __init__(self, job: tuple[str, ...]):
        self._mark = _mark(_cache_folder(), job)
        self._process = None if self._mark.exists() else _start(job, self._mark, NICE)

    def ready(self, wait: bool) -> bool:
        if self._process is None or self._mark.exists():
            return True
        if wait:
            self._process.wait()
        return self._process.poll() is not None


class Pipeline:
    """A split job (SPLIT_JOBS[job](*args, part) for each part; parts in the order this process first needs them):
    this process compiles the first part as it runs it, another the others in turn; wait_for(part) before this
    process first needs a part. A Waitable for all the parts."""

    def __init__(self, job: str, args: tuple[str, ...], parts: list[str]):
        self._marks = {part: _mark(_cache_folder(), (job, part)) for part in parts[1:]}
        left = [part for part, mark in self._marks.items() if not mark.exists()]
        self._process = _start((job, *args, *left), _mark(_cache_folder(), (job,)), 0) if left else None

    def pending(self) -> list[str]:
        """The parts the other process is still compiling."""
        alive = self._process is not None and self._process.poll() is None
        return [part for part, mark in self._marks.items() if not mark.exists()] if alive else []

    def ready(self, wait: bool) -> bool:
        if wait:
            for part in self._marks:
                self.wait_for(part)
        return not self.pending()

    def wait_for(self, part: str) -> None:
        """Return once the part's kernels are in the cache, or the process compiling it ended without putting them
        there (then this process compiles them as it runs them)."""
        mark = self._marks.get(part)
        while self._process is not None and mark is not None and not mark.exists() and self._process.poll() is None:
            time.sleep(POLL)


def _cache_folder() -> Path:
    return Path(os.environ["NUMBA_CACHE_DIR"])


def _mark(folder: Path, job: tuple[str, ...]) -> Path:
    return folder / "aside" / "-".join(job)


def _start(job: tuple[str, ...], mark: Path, nice: int) -> Optional[subprocess.Popen]:
    """The process compiling job's kernels into a folder of its own, then into this process's cache folder; what
    it writes goes to a log beside mark. None where it cannot start (a cache folder it cannot write, say): then
    this process compiles them as it runs them."""
    try:
        mark.parent.mkdir(parents=True, exist_ok=True)
        with mark.with_suffix(".log").open("w") as log:
            return subprocess.Popen([sys.executable, "-m", __name__, str(_cache_folder()), *job],
                                    env={**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="kinetic-aside-")},
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    preexec_fn=(lambda: os.nice(nice)) if nice and hasattr(os, "nice") else None)
    except OSError:
        return None


def _torque(count: str, gelu: str, recurrent: str) -> None:
    from kinetic_cpu.torque_tables import compiled_code

    compiled_code(int(count), bool(int(gelu)), bool(int(recurrent)))


def _shortlist() -> None:
    from kinetic_cpu.shortlist import compile_kernels

    compile_kernels()


def _products(path: str, type_name: str) -> None:
    from kinetic_cpu.matrices import compile_products

    compile_products(Path(path), type_name)


JOBS = {"torque": _torque, "shortlist": _shortlist}
SPLIT_JOBS = {"products": (1, _products)}  # job: (its arguments before the parts, the function compiling a part)


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


def _compiled(folder: Path, own: Path, mark: Path, compile_it) -> None:
    """compile_it() and its kernels added to folder's cache, then mark made, unless it is made already (another
    process may be doing it: then once it has)."""
    with flocked(str(mark.with_suffix(".lock"))):  # another process may have the job
        if not mark.exists():
            compile_it()
            merge(own, folder)
            mark.touch()


def main(argv: list[str]) -> int:
    folder, (job, *args) = Path(argv[0]), argv[1:]
    own = Path(os.environ["NUMBA_CACHE_DIR"])
    try:
        lock_cache()
        if job in SPLIT_JOBS:
            count, compile_part = SPLIT_JOBS[job]
            for part in args[count:]:
                _compiled(folder, own, _mark(folder, (job, part)), lambda: compile_part(*args[:count], part))
        else:
            _compiled(folder, own, _mark(folder, (job, *args)), lambda: JOBS[job](*args))
    finally:
        shutil.rmtree(own, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
