"""Long work shown on a terminal: a bar of counted steps (tqdm), or a line naming what is happening with the
seconds it has taken so far. It all goes to standard error, and only once the command line has turned it on
(`show_on_terminal`) with standard error a terminal: piped answers, logs and library callers see nothing."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from abc import ABC, abstractmethod
from contextlib import contextmanager
from typing import Iterable, Iterator, Optional, TypeVar

SHOW_AFTER = 0.5  # seconds: work done sooner shows nothing
REDRAW = 0.1  # seconds between redraws of a line
FRAMES = "|/-\\"

T = TypeVar("T")
_shown = threading.Event()
_drawers: set[threading.Thread] = set()
_writing = threading.Lock()  # a line and the activity drawn over it never interleave


def show_on_terminal(on: bool = True) -> None:
    """Progress is drawn from now on where standard error is a terminal; with False, every line drawn is wiped
    before this returns, so that what is written next starts on a clean line."""
    if on and sys.stderr.isatty():
        _shown.set()
        return
    _shown.clear()
    for drawer in list(_drawers):
        drawer.join()


def shown() -> bool:
    return _shown.is_set()


def say(line: str) -> None:
    """line on standard error, on a line of its own: over a drawn activity, which is drawn again below it."""
    _write(("\r\033[K" if _drawers else "") + line + "\n")


def _write(text: str) -> None:
    with _writing:
        sys.stderr.write(text)
        sys.stderr.flush()


def bar(items: Optional[Iterable[T]], unit: str, total: Optional[int] = None, what: Optional[str] = None):
    """items, counted on a bar while progress is shown (without items, a tqdm counted by its update); the bar
    is wiped when they end."""
    from tqdm import tqdm

    return tqdm(items, unit=unit, total=total, desc=what, disable=not shown(), leave=False)


class _Bracketed(ABC):
    """What begin() starts and end() ends, around a block: `with x.during():`, ended however the block ends."""

    @abstractmethod
    def begin(self) -> None: ...

    @abstractmethod
    def end(self) -> None: ...

    @contextmanager
    def during(self) -> Iterator[None]:
        self.begin()
        try:
            yield
        finally:
            self.end()


class Activity(_Bracketed):
    """A line "| what: 12 s" for work that may come in bursts (kernels compile one at a time): shown once the
    work has lasted SHOW_AFTER, kept across pauses shorter than `linger`, wiped when the work is over."""

    def __init__(self, what: str, linger: float = 0.0):
        self.what, self.linger = what, linger
        self._lock = threading.Lock()
        self._running = 0
        self._ended = 0.0
        self._drawer: Optional[threading.Thread] = None

    def begin(self) -> None:
        with self._lock:
            self._running += 1
            if self._drawer is None and shown():
                self._drawer = threading.Thread(target=self._draw, args=(time.perf_counter(),), daemon=True)
                _drawers.add(self._drawer)
                self._drawer.start()

    def end(self) -> None:
        with self._lock:
            self._running -= 1
            self._ended = time.perf_counter()
            drawer = self._drawer if self._running == 0 and self.linger == 0 else None
        if drawer is not None:
            drawer.join()

    def _over(self) -> bool:
        with self._lock:
            over = not shown() or self._running == 0 and time.perf_counter() - self._ended >= self.linger
            if over:
                self._drawer = None
            return over

    def _draw(self, started: float) -> None:
        drawn = False
        try:
            for frame in itertools.cycle(FRAMES):
                if self._over():
                    break
                elapsed = time.perf_counter() - started
                if elapsed >= SHOW_AFTER:
                    _write(f"\r{frame} {self.what}: {elapsed:.0f} s\033[K")
                    drawn = True
                time.sleep(REDRAW)
        finally:
            if drawn:
                _write("\r\033[K")
            _drawers.discard(threading.current_thread())


def showing(what: str):
    """A line naming the work inside the `with` block, while it lasts."""
    return Activity(what).during()


class CompileClock(_Bracketed):
    """The seconds this process has spent compiling a device's kernels, with a line on the terminal while they
    compile. A compilation started inside another (numba compiles a kernel's callees) counts once."""

    def __init__(self, what: str):
        self.seconds = 0.0
        self.activity = Activity(what, linger=1.0)  # kernels compile one after another, with a pass between
        self._depth = threading.local()

    def begin(self) -> None:
        depth = getattr(self._depth, "n", 0)
        if depth == 0:
            self._depth.started = time.perf_counter()
            self.activity.begin()
        self._depth.n = depth + 1

    def end(self) -> None:
        self._depth.n -= 1
        if self._depth.n == 0:
            self.seconds += time.perf_counter() - self._depth.started
            self.activity.end()
