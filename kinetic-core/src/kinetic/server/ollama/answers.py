"""POST /api/chat and /api/generate: the request runs as the OpenAI routes' do (the job from jobs.py, the
run on the served model's slots and Convoy, the answer split by chat_answer.ChatAnswer), and answers in
Ollama's shape, streamed as NDJSON unless "stream": false (Ollama's api/types.go ChatResponse,
GenerateResponse and Metrics; durations in nanoseconds)."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from kinetic.server.chat_answer import ChatAnswer, Delta
from kinetic.server.errors import ollama_error
from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_job, completion_job
from kinetic.server.ollama.described import rfc3339
from kinetic.server.ollama.requests import chat_body, generate_body, requested_model
from kinetic.server.openai import cancelled_by, chat_entry
from kinetic.server.served import Job, Run, ServedModel
from kinetic.server.sse import guarded, lazy


def json_line(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass
class Reply:
    """One answer's bodies: chat ones carry a message, generate ones a response; calls are numbered across
    the answer."""

    served: ServedModel
    name: str
    chat: bool
    started: int  # time.perf_counter_ns() when the request came
    calls: int = 0

    def head(self) -> dict[str, Any]:
        return {"model": self.name, "created_at": rfc3339(time.time_ns())}

    def text(self, delta: Delta) -> dict[str, Any]:
        thinking = {"thinking": delta.reasoning} if delta.reasoning else {}
        if not self.chat:
            return {"response": delta.content, **thinking}
        message = {"role": "assistant", "content": delta.content, **thinking}
        if delta.calls:
            message["tool_calls"] = [self._call(call) for call in delta.calls]
        return {"message": message}

    def _call(self, call) -> dict[str, Any]:
        """A call as Ollama gives it: arguments as an object (the tool grammar made them one)."""
        self.calls += 1
        return {"id": call.id, "function": {"index": self.calls - 1, "name": call.name,
                                            "arguments": json.loads(call.arguments)}}

    def chunk(self, delta: Delta, logprobs: list[dict[str, Any]]) -> dict[str, Any]:
        return {**self.head(), **self.text(delta), "done": False, **({"logprobs": logprobs} if logprobs else {})}

    def final(self, run: Run, delta: Optional[Delta] = None,
              logprobs: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
        return {**self.head(), **self.text(delta or Delta()), "done": True, "done_reason": run.finish_reason,
                **self.metrics(run), **({"logprobs": logprobs} if logprobs else {})}

    def loaded(self) -> dict[str, Any]:
        """The answer to a request without a prompt or messages, which in Ollama loads the model: it is."""
        return {**self.head(), **self.text(Delta()), "done": True, "done_reason": "load"}

    def metrics(self, run: Run) -> dict[str, int]:
        """load_duration is the time not spent on the prompt or the answer: waiting for a slot, the chat
        template, tokenizing (the model itself was loaded when the server started)."""
        timings = run.timings
        prompt_ns, eval_ns = int(timings.prompt_seconds * 1e9), int(timings.generate_seconds * 1e9)
        total = time.perf_counter_ns() - self.started
        return {"total_duration": total, "load_duration": max(0, total - prompt_ns - eval_ns),
                "prompt_eval_count": run.usage.prompt_tokens, "prompt_eval_duration": prompt_ns,
                "eval_count": run.usage.completion_tokens, "eval_duration": eval_ns}


def deltas(run: Run, answer: ChatAnswer) -> Iterator[tuple[Delta, list[dict[str, Any]]]]:
    """Each piece's part of the answer (often empty: text held back) with its token's logprobs; then what
    the end releases, unless the client left."""
    tokenizer = run.served.session.tokenizer
    for piece in run:
        delta = answer.feed(piece.text)
        yield delta, [chat_entry(tokenizer, piece.logprobs)] if piece.logprobs is not None else []
    if run.finish_reason is not None:
        yield answer.finish(), []


def streamed(reply: Reply, run: Run) -> Iterator[dict[str, Any]]:
    for delta, scored in deltas(run, ChatAnswer(run.job)):
        if delta.reasoning or delta.content or delta.calls or scored:
            yield reply.chunk(delta, scored)
    if run.finish_reason is not None:
        yield reply.final(run)


def whole(reply: Reply, run: Run) -> dict[str, Any]:
    total, logprobs = Delta(), []
    for delta, scored in deltas(run, ChatAnswer(run.job)):
        total += delta
        logprobs += scored
    return reply.final(run, total, logprobs)


def answer(req, resp, reply: Reply, job: Job, stream: bool) -> None:
    """Run job, answering with NDJSON lines or one body; a client that leaves a stream frees its slot."""
    run = reply.served.run(job, cancelled_by(req))
    if not stream:
        resp.media = whole(reply, run)
        return
    resp.content_type = "application/x-ndjson"
    resp.stream = guarded(lazy(lambda: streamed(reply, run)), None, json_line, ollama_error)


class Answering(ABC):
    """A POST route that answers with a model: an empty request only loads it, as Ollama's does."""

    chat: bool

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        started = time.perf_counter_ns()
        fields = Fields(read_json(req))
        name = requested_model(self.served, fields)
        reply = Reply(self.served, name, chat=self.chat, started=started)
        job = self.job(name, fields)
        if job is None:
            resp.media = reply.loaded()
            return
        answer(req, resp, reply, job, fields.boolean("stream", True))

    @abstractmethod
    def job(self, name: str, fields: Fields) -> Optional[Job]:
        """The request's job, or None when it has nothing to answer."""


class Chat(Answering):
    """POST /api/chat."""

    chat = True

    def job(self, name: str, fields: Fields) -> Optional[Job]:
        body = chat_body(self.served, name, fields)
        return chat_job(self.served, Fields(body)) if body["messages"] else None


class Generate(Answering):
    """POST /api/generate."""

    chat = False

    def job(self, name: str, fields: Fields) -> Optional[Job]:
        body = generate_body(self.served, name, fields)
        if not fields.string("prompt"):
            return None
        make = chat_job if "messages" in body else completion_job
        return make(self.served, Fields(body))
