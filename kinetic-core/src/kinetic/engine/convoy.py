"""Convoy: several generations advance together, each pass holding one step of every one of them (a prompt
chunk, a decode row, a draft), on one thread that owns the runner. Each row attends only to its own
sequence and the kernels are batch-invariant, so every answer is token for token what it is alone
(docs/exactness.md, section 1)."""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from typing import Callable, Iterator, Optional, Protocol

import numpy as np

from kinetic.contracts.device import Row, Runner
from kinetic.engine.generate import Pass, Steps
from kinetic.engine.pass_costs import PassCosts, drafts_worth_running

POLL = 0.25  # seconds between checks that a rider's client is still there
_END = object()


class Stepped(Protocol):
    """What rides: a Generation, or a prompt run ahead (engine.prefill.Prefill)."""

    def steps(self) -> Steps: ...


class Ride:
    """One generation in the convoy. Its tokens are read from any thread; the convoy's thread makes the
    generation (make(), so that whatever it does on the device happens there) and runs its passes."""

    def __init__(self, make: Callable[[], Stepped]):
        self._make = make
        self.generation: Optional[Stepped] = None  # once made
        self._steps: Optional[Steps] = None
        self._reply: Optional[np.ndarray] = None
        self._out: queue.SimpleQueue = queue.SimpleQueue()
        self._leaving = threading.Event()  # the reader is gone
        self.over = threading.Event()  # the generation is closed: its sequence is free again

    def tokens(self, cancelled: Callable[[], bool]) -> Iterator[int]:
        """The answer's tokens as they come; an error in the generation is raised here. Stops (and leaves the
        convoy) once cancelled() turns true."""
        try:
            while True:
                try:
                    item = self._out.get(timeout=POLL)
                except queue.Empty:
                    if cancelled():
                        return
                    continue
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.leave()

    def leave(self) -> None:
        """The reader stops: the convoy closes the generation before its next pass; returns once it has."""
        self._leaving.set()
        self.over.wait()

    def advance(self) -> Optional[Pass]:
        """On the convoy's thread: the generation up to its next pass; None once it is over."""
        try:
            if self._steps is None:
                self.generation = self._make()
                self._steps = self.generation.steps()
            while not self._leaving.is_set():
                step = self._steps.send(self._reply)
                self._reply = None
                if isinstance(step, Pass):
                    return step
                self._out.put(step)
        except StopIteration:
            pass
        except Exception as error:  # the reader raises it; the other riders go on
            self._end(error)
            return None
        self._end()
        return None

    def answer(self, logits: np.ndarray) -> None:
        self._reply = logits

    def fail(self, error: BaseException) -> None:
        """The pass this rider was in failed."""
        self._end(error)

    def _end(self, error: Optional[BaseException] = None) -> None:
        try:
            if self._steps is not None:
                self._steps.close()
        finally:
            self._out.put(_END if error is None else error)
            self.over.set()


def joined(passes: list[Pass]) -> list[Row]:
    """The rows of passes as one pass: each row's parent, an index in its own pass, moved to the joined one."""
    rows, start = [], 0
    for step in passes:
        rows += [row if row.parent < 0 else dataclasses.replace(row, parent=row.parent + start) for row in step.rows]
        start += len(step.rows)
    return rows


class Convoy:
    """The runner's one driver: riders join at any time, and every pass takes one step of each."""

    def __init__(self, runner: Runner, known_costs: dict[int, float] = {}):
        """known_costs: seconds of a pass by its rows, measured before on this kind of device (engine/profile.py)."""
        self.runner = runner
        self.costs = PassCosts(known_costs)
        self._cond = threading.Condition()
        self._joining: list[Ride] = []
        self._thread: Optional[threading.Thread] = None

    def join(self, make: Callable[[], Stepped]) -> Ride:
        ride = Ride(make)
        with self._cond:
            self._joining.append(ride)
            if self._thread is None:
                self._thread = threading.Thread(target=self._drive, name="kinetic-convoy", daemon=True)
                self._thread.start()
            self._cond.notify()
        return ride

    def _drive(self) -> None:
        riding: list[Ride] = []
        while True:
            with self._cond:
                while not riding and not self._joining:
                    self._cond.wait()
                riding += self._joining
                self._joining.clear()
            started, compiled = time.perf_counter(), self.runner.compile_seconds
            steps = [(ride, ride.advance()) for ride in riding]
            self._run([(ride, step) for ride, step in steps if step is not None], started, compiled)
            riding = [ride for ride, step in steps if step is not None and not ride.over.is_set()]

    def _run(self, steps: list[tuple[Ride, Pass]], started: float, compiled: float) -> None:
        """One pass of every rider's rows; each gets the logits of its own rows that ask. Its cost, from
        `started` (before the riders picked the tokens of the last pass and drafted), is recorded by size
        unless kernels compiled meanwhile (the runner's compile_seconds was `compiled`)."""
        if not steps:
            return
        try:
            steps = list(zip([ride for ride, _ in steps], drafts_worth_running([step for _, step in steps], self.costs)))
            rows = joined([step for _, step in steps])
            logits = self.runner.forward(rows)
        except Exception as error:  # e.g. out of device memory: every rider of this pass is told
            for ride, _ in steps:
                ride.fail(error)
            return
        if self.runner.compile_seconds == compiled:
            self.costs.record(len(rows), time.perf_counter() - started)
        at = 0
        for ride, step in steps:
            asks = sum(row.logits for row in step.rows)
            ride.answer(logits[at:at + asks])
            at += asks
