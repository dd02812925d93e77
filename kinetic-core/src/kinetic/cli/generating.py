"""Streaming one answer to the terminal: text to stdout, speed to stderr."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from kinetic import progress
from kinetic.cli.constraints import answer_grammar
from kinetic.cli.options import sampling_overrides, session_options
from kinetic.contracts.device import DeviceSequence
from kinetic.engine.embedding import pooling_of
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.sampling.settings import SamplingSettings

LIVE_EVERY = 0.5  # seconds between live speed updates on stderr


def open_session(model, options: Mapping[str, Any]) -> Session:
    """The session run and chat generate with; an embedding model is refused, naming what serves it."""
    session = Session(model, session_options(options))
    pooling = pooling_of(session)
    if pooling == "rank":
        raise KineticError(f"{session.name} is a reranking model: it scores documents, not text; serve it with "
                           "kinetic serve and use /v1/rerank, or kinetic.Model(...).rerank in Python")
    if pooling is not None:
        raise KineticError(f"{session.name} is an embedding model: it gives vectors, not text; serve it with "
                           "kinetic serve and use /v1/embeddings, or kinetic.Model(...).embed in Python")
    return session


def ready_sequence(session: Session) -> DeviceSequence:
    """A new sequence; on a terminal its kernels are run first (compiled, the first time, under a line saying so),
    so that no compilation stalls an answer once its text has started."""
    seq = session.new_sequence()
    if progress.shown():
        session.warm_up(seq)
    return seq


def template_kwargs(options: Mapping[str, Any]) -> dict[str, Any]:
    reasoning = options.get("reasoning")
    return {} if reasoning is None else {"enable_thinking": reasoning != "off"}


@dataclass(frozen=True)
class Answered:
    tokens: list[int]
    text: str
    settings: SamplingSettings  # with the seed it used
    finish: str  # "stop" (an end-of-generation token) or "length"


def answer(session: Session, seq: DeviceSequence, tokens: Sequence[int], cached: Sequence[int],
           options: Mapping[str, Any]) -> Answered:
    """Generate and stream the answer to the context `tokens` (seq holds `cached`)."""
    settings = session.settings(sampling_overrides(options))
    generation = session.generate(seq, tokens, settings, options["n_predict"], cached,
                                  grammar=answer_grammar(options))
    detokenizer = session.tokenizer.detokenizer(special=False)
    shown = progress.shown()
    live = shown and not sys.stdout.isatty()  # the answer goes to a file or a pipe: its speed shows meanwhile
    last_update = time.perf_counter()
    tokens, text = [], []
    for token in generation:
        if not tokens:
            progress.show_on_terminal(False)  # the answer starts on a clean line, and nothing draws over it
        tokens.append(token)
        text.append(detokenizer.feed(token))
        sys.stdout.write(text[-1])
        sys.stdout.flush()
        if live and time.perf_counter() - last_update > LIVE_EVERY:
            last_update = time.perf_counter()
            rate = len(tokens) / max(generation.timings.generate_seconds, 1e-9)
            sys.stderr.write(f"\r[{len(tokens)} tokens at {rate:.1f} tok/s]")
            sys.stderr.flush()
    text.append(detokenizer.finish())
    sys.stdout.write(text[-1] + "\n")
    sys.stdout.flush()
    if live:
        sys.stderr.write("\r")
    progress.show_on_terminal(shown)
    for line in (generation.timings.compile_line(), generation.timings.status_line(session.runner.device_name)):
        if line is not None:
            print(line, file=sys.stderr, flush=True)
    return Answered(tokens, "".join(text), settings, generation.timings.finish_reason)
