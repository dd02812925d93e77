"""The served model: one Session, its prompt cache, the queue of requests, and one request's run on it."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

import numpy as np

from kinetic.constraints import Grammar
from kinetic.contracts.drafting import Drafter
from kinetic.engine.convoy import Convoy
from kinetic.engine.profile import pass_seconds
from kinetic.engine.embedding import Embedder, pooling_of
from kinetic.engine.generate import Generation, check_prompt
from kinetic.engine.ranking import Ranker
from kinetic.engine.session import Session
from kinetic.sampling.settings import SamplingSettings
from kinetic.server.line_limits import LineLimits
from kinetic.server.defaults import ServerDefaults
from kinetic.server.logprobs import TokenLogprobs, token_logprobs
from kinetic.server.metrics import Metrics
from kinetic.server.stops import StopScanner
from kinetic.server.slots import ServedSlot, SlotPool
from kinetic.tools import Markup, Tool, ToolFormat, format_for
from kinetic.tools.grammar import markup_for

Cancelled = Callable[[], bool]  # true once the client is gone


def never() -> bool:
    return False


@dataclass(frozen=True)
class Job:
    """What every generating route turns its body into."""

    prompt: list[int]  # the whole context, chat template applied
    overrides: dict[str, Any]  # SamplingSettings fields the request set
    max_tokens: int  # <= 0: until the answer ends or the context is full
    stops: tuple[str, ...] = ()
    top_logprobs: Optional[int] = None  # None: no log-probabilities; else 0 to 20 alternatives
    prompt_text: str = ""  # what /slots shows
    thinking: Optional[bool] = None  # reasoning.thinking_start: None, or whether the answer starts thinking
    harmony: bool = False  # the answer is in gpt-oss's harmony format (kinetic.chat.harmony)
    cache_prompt: bool = True  # False: compute the whole prompt, reusing no earlier state (llama-server's field)
    stream: bool = False  # the answer is streamed (what /slots' params report)
    n_indent: int = 0  # llama-server's line limits (line_limits.py); 0: none
    t_max_predict_ms: int = 0
    grammar: Optional[Grammar] = None  # what the answer must follow (response_format, json_schema, grammar, tools)
    tool_format: Optional[ToolFormat] = None  # the format calls are read in, when tools are offered
    tool_functions: tuple[Tool, ...] = ()  # the functions offered


@dataclass(frozen=True)
class Piece:
    """Text released to the client, with the token it came from (None for held-back text released at the end)."""

    text: str
    token: Optional[int] = None
    logprobs: Optional[TokenLogprobs] = None


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens not recomputed

    def report(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens}}


class ServedModel:
    """The model the server answers with: parallel slots, whose requests share passes (Convoy)."""

    def __init__(self, session: Session, name: Optional[str] = None, parallel: int = 1,
                 defaults: ServerDefaults = ServerDefaults()):
        self.session = session
        self.name = name or session.name
        self.defaults = defaults
        self.created = int(time.time())
        self.metrics = Metrics()
        self.pool = SlotPool([ServedSlot(i, session.new_sequence(), drafter_for(session, i)) for i in range(parallel)])
        self.convoy = Convoy(session.runner, pass_seconds(session.model.profile, session.runner.device_class))
        pooling = pooling_of(session)
        self.embedder = Embedder(session) if pooling not in (None, "rank") else None  # an embedding model's
        self.ranker = Ranker(session) if pooling == "rank" else None  # a reranking model's
        self._tasks = itertools.count(1)
        self._prefills = itertools.count(1)
        self._latest_prefill = 0

    @property
    def context_length(self) -> int:
        return self.session.context_length

    @functools.cached_property
    def tool_format(self) -> ToolFormat:
        """The format the chat template writes tool calls in."""
        template = self.session.template
        return format_for(template.source, template.capabilities.tools or template.capabilities.tool_calls)

    @functools.cached_property
    def tool_markup(self) -> Markup:
        """How the tool grammar writes the format's markers in this vocabulary."""
        return markup_for(self.session.tokenizer, self.tool_format)

    @property
    def shown_markers(self) -> frozenset[int]:
        """The special tokens an answer with tools shows as text, for its calls to be read."""
        return frozenset(self.tool_markup.token_ids.values())

    def warm_up(self) -> None:
        """Load the kernels before the first request needs them."""
        self.session.warm_up(self.pool.slots[0].seq)

    def run(self, job: Job, cancelled: Cancelled = never) -> Run:
        """The run of job, once a slot is free. The engine checks the prompt when the run starts; it is checked
        here too, as the request arrives, so that a refused stream gets its 400 instead of a 200 and an error."""
        check_prompt(job.prompt, self.session.tokenizer.n_vocab, self.context_length)
        return Run(self, dataclasses.replace(job, max_tokens=self.defaults.max_tokens(job.max_tokens)), cancelled)

    def generate(self, slot: ServedSlot, job: Job, settings: SamplingSettings,
                 on_pick: Optional[Callable[[np.ndarray, int], None]] = None) -> Generation:
        """The answer to job on slot's sequence, resuming from the tokens it holds unless job.cache_prompt is
        off. The convoy's thread calls it when the run joins; Run remembers or forgets when the answer ends."""
        cached = slot.cached if job.cache_prompt else []
        return self.session.generate(slot.seq, job.prompt, settings, job.max_tokens, cached, on_pick,
                                     reuse=job.cache_prompt, grammar=job.grammar, drafter=slot.drafter)

    def prefill(self, tokens: list[int], upto: int) -> int:
        """Zero Wait: the prompt of a request to come run ahead on a free slot, up to the last prompt batch
        boundary at or before upto; it gives way when a request waits for a slot or a newer prefill comes.
        The number of the prompt's tokens the slot then holds (0 when no slot was free or Zero Wait is off)."""
        self._latest_prefill = mine = next(self._prefills)
        slot = self.pool.take_free(tokens) if self.session.runs_ahead else None
        if slot is None:
            return 0
        try:
            give_way = lambda: self.pool.waiting > 0 or self._latest_prefill != mine  # noqa: E731
            ride = self.convoy.join(lambda: self.session.prefill(slot.seq, tokens, slot.cached, upto, give_way))
            for _ in ride.tokens(never):
                pass
            slot.remember(tokens)
            return slot.seq.n_tokens
        except Exception:
            slot.forget()
            raise
        finally:
            self.pool.release(slot)

    def start_task(self, slot: ServedSlot, job: Job, cached: int, settings: SamplingSettings) -> None:
        """What /slots shows of slot from now on: a new task running job, with cached prompt tokens reused."""
        slot.report = dataclasses.replace(
            slot.report, id_task=next(self._tasks), is_processing=True, n_prompt_tokens=len(job.prompt),
            n_prompt_tokens_processed=len(job.prompt) - cached, n_prompt_tokens_cache=cached, n_decoded=0,
            has_new_line=False, n_predict=job.max_tokens, job=job, settings=settings)


def drafter_for(session: Session, index: int) -> Optional[Drafter]:
    """Slot index's drafter: the session's for the first, a fork of it for the others, so that drafts of
    answers generated side by side do not mix."""
    drafter = session.drafter
    return drafter if drafter is None or index == 0 else drafter.fork()


def settings_report(settings) -> dict[str, Any]:
    """SamplingSettings as JSON: logit_bias as [id, bias] pairs, a banned token's bias false (llama-server's way)."""
    report = dataclasses.asdict(settings)
    report["logit_bias"] = [[token, False if bias == float("-inf") else bias]
                            for token, bias in settings.logit_bias.items()]
    report["dry_sequence_breakers"] = list(settings.dry_sequence_breakers)
    return report


@dataclass
class Run:
    """One request on the served model: iterate for Pieces; usage counts the prompt (and its cached tokens) from
    the first Piece on, finish_reason and the rest are set when it ends."""

    served: ServedModel
    job: Job
    cancelled: Cancelled
    finish_reason: Optional[str] = None  # "stop" or "length"; None while running or when the client left
    stop_word: str = ""
    usage: Usage = field(default_factory=Usage)
    settings: Any = None  # the SamplingSettings used, seed included
    timings: Any = None  # the generation's Timings, once it ended
    slot_id: int = -1  # the slot it ran on, once it has one
    tokens_held: int = 0  # the tokens its slot's sequence holds once it ended (llama-server's tokens_cached)
    tokens: list[int] = field(default_factory=list)  # the answer's token ids, as they come
    limits: LineLimits = field(init=False)

    def __post_init__(self) -> None:
        self.limits = LineLimits(self.job.n_indent, self.job.t_max_predict_ms)

    def cut(self, answer: str) -> str:
        """The whole answer's text as the client gets it at once: a line under n_indent cut off."""
        return self.limits.cut(answer)

    @property
    def truncated(self) -> bool:
        """It ended because the context was full, before the limit it asked for."""
        limit = self.job.max_tokens
        return self.finish_reason == "length" and not self.limits.ended and (
            limit <= 0 or self.usage.completion_tokens < limit)

    def __iter__(self) -> Iterator[Piece]:
        slot = self.served.pool.acquire(self.job.prompt, self.cancelled)
        if slot is None:
            return
        self.slot_id = slot.index
        try:
            yield from self._generate(slot)
        finally:
            slot.report.is_processing = False
            self.served.pool.release(slot)

    def _generate(self, slot: ServedSlot) -> Iterator[Piece]:
        served, job = self.served, self.job
        self.settings = settings = served.session.settings({**served.defaults.sampling, **job.overrides})
        picked: list[TokenLogprobs] = []
        on_pick = None if job.top_logprobs is None else (
            lambda logits, token: picked.append(token_logprobs(logits, token, job.top_logprobs)))

        def make() -> Generation:  # on the convoy's thread
            generation = served.generate(slot, job, settings, on_pick)
            served.start_task(slot, job, len(generation.context), settings)
            self.usage = Usage(len(job.prompt), 0, len(generation.context))
            return generation

        ride = served.convoy.join(make)
        answer = self.tokens
        shown = served.shown_markers if job.tool_format is not None else frozenset()
        try:
            yield from self._pieces(slot, ride.tokens(self.cancelled), answer, picked,
                                    served.session.tokenizer.detokenizer(False, shown))
        except Exception:
            ride.leave()
            slot.forget()
            raise
        finally:
            ride.leave()  # the generation is closed: its sequence holds what it will hold
            if ride.generation is not None:
                slot.remember(job.prompt + answer)
                self.tokens_held = slot.seq.n_tokens
                self._finish(ride.generation, len(answer))

    def _pieces(self, slot: ServedSlot, tokens: Iterator[int], answer: list[int], picked: list[TokenLogprobs],
                detokenizer) -> Iterator[Piece]:
        scanner = StopScanner(self.job.stops)
        for token in tokens:
            answer.append(token)
            slot.report.n_decoded = len(answer)
            scored = picked[len(answer) - 1] if picked else None
            text = scanner.feed(detokenizer.feed(token))
            slot.report.has_new_line |= "\n" in text
            yield Piece(text, token, scored)
            if self.limits.active and self.limits.feed(text):
                self.finish_reason = "length"
                break
            if scanner.found is not None or self.cancelled():
                break
        tail = scanner.feed(detokenizer.finish()) + scanner.finish()
        if tail:
            yield Piece(tail)
        if scanner.found is not None:
            self.finish_reason, self.stop_word = "stop", scanner.found

    def _finish(self, generation: Generation, n_answer: int) -> None:
        self.timings = timings = generation.timings
        self.usage = Usage(len(self.job.prompt), n_answer, len(generation.context))
        if self.finish_reason is None and not self.cancelled():
            self.finish_reason = timings.finish_reason
        self.served.metrics.record(timings.prompt_tokens, self.usage.cached_tokens, timings.prompt_seconds,
                                   n_answer, timings.generate_seconds, len(self.job.prompt) + n_answer)
