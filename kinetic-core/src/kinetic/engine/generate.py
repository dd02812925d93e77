"""The decoding loop: a prompt in fixed-grid batches, then one token per pass until a stop."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Iterator, Optional, Sequence, Union

import numpy as np

from kinetic.contracts.device import DeviceSequence, Row, Runner
from kinetic.contracts.drafting import Drafter
from kinetic.errors import KineticError, PromptError, PromptTooLong

PROMPT_GRID = 512  # prompt batches end on multiples of this position, warm or cold (docs/exactness.md, section 3)

# (logits [n_vocab] float32, tokens so far, index of the token being generated) -> token id
PickNext = Callable[[np.ndarray, Sequence[int], int], int]


@dataclass
class Timings:
    prompt_tokens: int = 0
    prompt_seconds: float = 0.0
    generated_tokens: int = 0
    generate_seconds: float = 0.0
    finish_reason: str = "stop"  # "stop" (an end-of-generation token) or "length"
    compile_seconds: float = 0.0  # spent compiling kernels, left out of both speeds

    def status_line(self, device_name: str) -> str:
        """[45 tokens at 25.5 tok/s; prompt 37 tokens at 62.8 tok/s on the CPU]"""
        return (f"[{self.generated_tokens} tokens at {_rate(self.generated_tokens, self.generate_seconds)} tok/s; "
                f"prompt {self.prompt_tokens} tokens at {_rate(self.prompt_tokens, self.prompt_seconds)} tok/s "
                f"on {device_name}]")

    def compile_line(self) -> Optional[str]:
        """compiling kernels, once: 31 s; None when compilation took less than a second (kernels from a cache)."""
        return f"compiling kernels, once: {self.compile_seconds:.0f} s" if self.compile_seconds >= 1 else None


def _rate(n: int, seconds: float) -> str:
    return f"{n / seconds:.1f}" if seconds > 0 else "0.0"


class Stopwatch:
    """Seconds since it started, less the time the runner spent compiling kernels meanwhile: compilation
    happens once per machine, so it is reported on its own rather than as prompt or generation time."""

    def __init__(self, runner: Runner):
        self.runner = runner
        self.started = time.perf_counter()
        self.compiled_before = runner.compile_seconds

    def compiling(self) -> float:
        return self.runner.compile_seconds - self.compiled_before

    def working(self) -> float:
        return time.perf_counter() - self.started - self.compiling()


def check_prompt(tokens: Sequence[int], n_vocab: int, context_length: int) -> None:
    """A PromptError for a prompt the model cannot take: empty, longer than the context (which must keep room
    for an answer token) or with a token id outside the vocabulary. Session.generate calls it before any work."""
    if not tokens:
        raise PromptError("the prompt is empty")
    if len(tokens) >= context_length:
        raise PromptTooLong(len(tokens), context_length)
    bad = next((t for t in tokens if not 0 <= t < n_vocab), None)
    if bad is not None:
        raise PromptError(f"token id {bad} is not in the model's vocabulary of {n_vocab}")


def prompt_batches(start: int, end: int, grid: int = PROMPT_GRID) -> Iterator[tuple[int, int]]:
    """[start, end) cut at every multiple of grid."""
    while start < end:
        stop = min(end, (start // grid + 1) * grid)
        yield start, stop
        start = stop


@dataclass(frozen=True)
class Pass:
    """Rows a generation asks to run; whoever drives it sends back the logits of the rows that ask, in row
    order (Runner.forward's answer), alone or as part of a pass shared with other generations."""

    rows: list[Row]
    guesses: int = 0  # the last rows are a draft: a driver may leave them out, and answers the rows it ran
    kept: float = 0.0  # the fraction of the drafter's recent guesses that were right (Drafter.kept)


Step = Union[Pass, int]  # what a generation's steps give: a pass to run, or the next token of the answer
Steps = Generator[Step, Optional[np.ndarray], None]


def run_alone(runner: Runner, steps: Generator[Step, Optional[np.ndarray], Any]) -> Generator[int, None, Any]:
    """The tokens of steps, each pass run on runner as soon as it is asked for, and what steps return;
    closing this closes steps."""
    try:
        reply = None
        while True:
            step = steps.send(reply)
            reply = runner.forward(step.rows) if isinstance(step, Pass) else None
            if reply is None:
                yield step
    except StopIteration as done:
        return done.value
    finally:
        steps.close()


def feed_steps(seq: DeviceSequence, tokens: Sequence[int], top: int = 0,
               hidden: bool = False) -> Generator[Pass, np.ndarray, np.ndarray]:
    """Append tokens to seq in grid batches, one pass each; the logits [n_vocab] of the last one (Row.top: top;
    Row.hidden: hidden)."""
    if not tokens:
        raise KineticError("the prompt is empty")
    first = seq.n_tokens
    logits = None
    for start, stop in prompt_batches(first, first + len(tokens)):
        rows = [Row(seq, int(tokens[p - first]), p, parent=i - 1, logits=p == first + len(tokens) - 1, top=top,
                    hidden=hidden) for i, p in enumerate(range(start, stop))]
        out = yield Pass(rows)
        if len(out):
            logits = out[-1]
    return logits


def feed(runner: Runner, seq: DeviceSequence, tokens: Sequence[int]) -> np.ndarray:
    """Append tokens to seq in grid batches, alone on runner; the logits [n_vocab] of the last one."""
    try:
        next(run_alone(runner, feed_steps(seq, tokens)))  # feeding picks no token: this ends at once
    except StopIteration as done:
        return done.value
    raise AssertionError("feeding a prompt picked a token")


@dataclass
class Generation:
    """One answer being generated; iterate it for token ids. timings fill in as it goes."""

    runner: Runner
    seq: DeviceSequence
    prompt: Sequence[int]
    pick_next: PickNext
    max_tokens: int  # <= 0 for no limit (the context still ends it)
    context_length: int
    stop_ids: frozenset[int]
    context: Sequence[int] = ()  # the tokens seq already holds, before prompt (samplers see them)
    drafter: Optional[Drafter] = None  # guesses checked in one pass each (RAD-1); None: one token per pass
    on_finish: Optional[Callable[["Generation", Sequence[int]], None]] = None  # (self, the tokens seq holds)
    top: int = 0  # Row.top of the rows it picks from: how many of the largest logits pick_next reads (0: all)
    timings: Timings = field(default_factory=Timings)

    def __iter__(self) -> Iterator[int]:
        """The answer, alone on the runner."""
        return run_alone(self.runner, self.steps())

    def steps(self) -> Steps:
        """The answer as passes to run and tokens picked (Pass, int), for a driver that may share each pass
        with other generations (the server's Convoy) or run it alone (__iter__)."""
        watch = Stopwatch(self.runner)
        logits = yield from feed_steps(self.seq, self.prompt, self.top, self._hidden)
        self.timings.prompt_tokens = len(self.prompt)
        self.timings.prompt_seconds, self.timings.compile_seconds = watch.working(), watch.compiling()
        yield from self._decode(logits)

    def _decode(self, logits: np.ndarray) -> Steps:
        history = [*self.context, *self.prompt]
        if self.drafter is not None:
            self.drafter.begin(history, self.seq)
        watch = Stopwatch(self.runner)
        self._held = self.seq.n_tokens
        try:
            yield from self._passes(logits, history, watch)
        finally:  # also when the caller stops early: guesses past the answer leave no trace
            self.seq.truncate(self._held)
            self.timings.generate_seconds = watch.working()
            self.timings.compile_seconds += watch.compiling()
            if self.drafter is not None:
                self.drafter.end(history)
            if self.on_finish is not None:
                self.on_finish(self, history[: self.seq.n_tokens])

    def _passes(self, logits: np.ndarray, history: list[int], watch: Stopwatch) -> Steps:
        """Each pass ran the last token and a draft; row j's logits pick the token after draft[:j]."""
        rows_logits, draft = [logits], []
        while True:
            for j, row_logits in enumerate(rows_logits):
                self._held = self.seq.n_tokens - len(draft) + j  # tokens whose keys and values are right
                token = self.pick_next(row_logits, history, self.timings.generated_tokens)
                if token in self.stop_ids:
                    self.timings.finish_reason = "stop"
                    return
                history.append(token)
                self.timings.generated_tokens += 1
                self.timings.generate_seconds = watch.working()
                yield token
                if self.timings.generated_tokens == self.max_tokens or self._held + 1 >= self.context_length:
                    self.timings.finish_reason = "length"
                    return
                if j == len(draft) or token != draft[j]:
                    break
            self.seq.truncate(self._held)
            if draft:
                self.drafter.feedback(len(draft), j)
            draft = self._draft(history)
            position = self.seq.n_tokens
            rows = [Row(self.seq, t, position + i, parent=i - 1, logits=True, top=self.top, hidden=self._hidden)
                    for i, t in enumerate([token, *draft])]
            rows_logits = yield Pass(rows, len(draft), self.drafter.kept() if draft else 0.0)
            del draft[len(rows_logits) - 1 :]  # guesses the driver left out

    @property
    def _hidden(self) -> bool:
        """Whether its rows keep their hidden states, for a drafter that reads them."""
        return self.drafter is not None and self.drafter.reads_hidden

    def _draft(self, history: list[int]) -> list[int]:
        """Guesses for after history that fit the context and the token budget."""
        if self.drafter is None:
            return []
        room = self.context_length - self.seq.n_tokens - 2
        if self.max_tokens > 0:
            room = min(room, self.max_tokens - self.timings.generated_tokens - 1)
        return self.drafter.propose(history, room)[:room] if room > 0 else []
