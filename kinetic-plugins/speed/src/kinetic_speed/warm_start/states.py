"""Warm Start's store: states in memory (up to 1 GiB) and on disk (up to 2 GiB), least recently used out
first, written to disk in the background; a state is restored only when that is faster than computing
its tokens, by speeds measured as it goes."""

from __future__ import annotations

import atexit
import queue
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Optional, Sequence

from kinetic.contracts.prompt_states import common_prefix
from kinetic.errors import KineticError
from kinetic_speed.warm_start.disk import DiskStates

MEMORY_BYTES = 1 << 30
DISK_BYTES = 2 << 30
RATE_WEIGHT = 0.5  # of the latest measurement in a running speed


class WarmStart:
    """A PromptStates (kinetic.contracts.prompt_states) for one loaded model on one device."""

    def __init__(self, folder: Path, identity: dict, memory_bytes: int = MEMORY_BYTES, disk_bytes: int = DISK_BYTES):
        self.memory: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.memory_bytes = memory_bytes
        self.disk = DiskStates(folder, identity, disk_bytes)
        self.prompt_rate: Optional[float] = None  # tokens computed per second
        self.restore_rate: Optional[float] = None  # state bytes restored per second
        self._lock = threading.Lock()  # the disk index, shared with the writer

    def restore(self, runner, seq, tokens: Sequence[int], held: int) -> int:
        """Attention states cut back exactly, so a state serves every start it shares with tokens."""
        found = self._longest(tokens, held)
        if found is None:
            return held
        key, source, shared = found
        blob = self.memory.get(key) if source is None else self._read(source)
        if blob is None or not self._worth(len(blob), shared - held):
            return held
        start = time.perf_counter()
        try:
            runner.load(blob, seq)
        except KineticError:  # not a state of this model after all: never trusted
            self.memory.pop(key, None)
            return held
        self.restore_rate = _running(self.restore_rate, len(blob) / max(time.perf_counter() - start, 1e-9))
        if source is None:
            self.memory.move_to_end(key)
        return shared

    def store(self, seq, tokens: Sequence[int], timings: Any) -> None:
        if timings.prompt_tokens >= 32 and timings.prompt_seconds > 0:
            self.prompt_rate = _running(self.prompt_rate, timings.prompt_tokens / timings.prompt_seconds)
        key = tuple(tokens)
        if not key or key in self.memory:
            if key:
                self.memory.move_to_end(key)
            return
        blob = seq.save()
        self.memory[key] = blob
        while sum(len(b) for b in self.memory.values()) > self.memory_bytes:
            self.memory.popitem(last=False)
        _writer().put((self, key, blob))

    def flush(self) -> None:
        """Wait until every state stored so far (by any store) is on disk."""
        _writer().join()

    def _longest(self, tokens: Sequence[int], held: int) -> Optional[tuple[tuple[int, ...], Optional[Path], int]]:
        """(key, None for memory or its file, tokens shared) of the state sharing the longest start with
        tokens, past held and short of the last token (it must run, for its logits)."""
        with self._lock:
            candidates = [(key, None) for key in self.memory] + [(key, path) for path, key in self.disk.keys().items()]
        best, best_shared = None, held
        for key, source in candidates:
            shared = common_prefix(key, tokens, len(tokens) - 1)
            if shared > best_shared:
                best, best_shared = (key, source, shared), shared
        return best

    def _read(self, path: Path) -> Optional[bytes]:
        with self._lock:
            return self.disk.read(path)

    def _worth(self, n_bytes: int, n_tokens: int) -> bool:
        if self.prompt_rate is None or self.restore_rate is None:
            return True
        return n_bytes / self.restore_rate < n_tokens / self.prompt_rate

    def _write(self, key: tuple[int, ...], blob: bytes) -> None:
        try:
            with self._lock:
                self.disk.write(key, blob)
        except OSError:
            pass  # a full or read-only disk costs only the disk copy; memory still has it


_WRITES: Optional[queue.Queue] = None
_STARTING = threading.Lock()


def _writer() -> queue.Queue:
    """The process's one queue of disk writes, served by one background thread and drained at exit; it
    holds a store only while one of its writes waits, so a dropped store can be freed."""
    global _WRITES
    with _STARTING:
        if _WRITES is None:
            _WRITES = queue.Queue()
            threading.Thread(target=_serve, args=(_WRITES,), daemon=True, name="warm-start writer").start()
            atexit.register(_WRITES.join)
    return _WRITES


def _serve(writes: queue.Queue) -> None:
    while True:
        store, key, blob = writes.get()
        try:
            store._write(key, blob)
        finally:
            writes.task_done()


def _running(previous: Optional[float], latest: float) -> float:
    return latest if previous is None else (1 - RATE_WEIGHT) * previous + RATE_WEIGHT * latest
