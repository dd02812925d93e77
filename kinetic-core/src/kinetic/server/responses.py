"""OpenAI's Responses API: POST /v1/responses (streamed as its named events, or whole) and
/v1/responses/input_tokens. The request takes the chat route's path (responses_request.chat_body,
jobs.chat_job); the answer's parts (answer_parts) become output items: reasoning, message, function_call."""

from __future__ import annotations

import itertools
import secrets
import time
from typing import Any, Iterator

from kinetic.server.answer_parts import ADD, CALL, OPEN, TEXT, THINKING, AnswerParts, Part, Step, whole_answer
from kinetic.server.errors import error_body
from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_job, render_chat
from kinetic.server.openai import cancelled_by
from kinetic.server.responses_request import chat_body
from kinetic.server.served import Run, ServedModel
from kinetic.server.sse import stream

# The request's fields the response repeats, with OpenAI's defaults
ECHOED = {"instructions": None, "max_output_tokens": None, "metadata": {}, "parallel_tool_calls": True,
          "temperature": None, "tool_choice": "auto", "tools": [], "top_p": None, "text": {"format": {"type": "text"}},
          "reasoning": None, "truncation": "disabled", "user": None}
ID_STARTS = {THINKING: "rs_", CALL: "fc_", TEXT: "msg_"}  # an item's id by its kind, as OpenAI's look


class Responses:
    """POST /v1/responses and /responses."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        body = read_json(req)
        chat = chat_body(body)
        run = self.served.run(chat_job(self.served, Fields(chat)), cancelled_by(req))
        head = {"id": "resp_" + secrets.token_hex(12), "object": "response", "created_at": int(time.time()),
                "model": self.served.name, **{name: body.get(name, default) for name, default in ECHOED.items()},
                "previous_response_id": None, "store": False, "error": None}
        if chat["stream"]:
            stream(resp, lambda: Events(run, head).all(), done=False, named=True, failure=stream_error)
            return
        parts = whole_answer(run.job, "".join(piece.text for piece in run))
        resp.media = finished(head, run, [item(part, "completed") for part in parts.parts])


class InputTokens:
    """POST /v1/responses/input_tokens: the prompt's tokens, as the template renders the input and tools."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        prompt = render_chat(self.served, Fields(chat_body(read_json(req)))).prompt
        resp.media = {"object": "response.input_tokens", "input_tokens": len(prompt)}


def routes(served: ServedModel) -> dict[str, Any]:
    answer, count = Responses(served), InputTokens(served)
    return {"/v1/responses": answer, "/responses": answer,
            "/v1/responses/input_tokens": count, "/responses/input_tokens": count}


def stream_error(status: int, message: str) -> dict[str, Any]:
    """A failure after the stream began: an `error` event, whose "error" the openai client raises."""
    return {"type": "error", **error_body(status, message)}


def finished(head: dict[str, Any], run: Run, output: list[dict[str, Any]]) -> dict[str, Any]:
    """The response once the answer ended: incomplete when it ran out of max_output_tokens."""
    used = run.usage
    cut = run.finish_reason == "length"
    return {**head, "status": "incomplete" if cut else "completed", "completed_at": int(time.time()),
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None, "output": output,
            "usage": {"input_tokens": used.prompt_tokens, "input_tokens_details": {"cached_tokens": used.cached_tokens},
                      "output_tokens": used.completion_tokens,
                      "total_tokens": used.prompt_tokens + used.completion_tokens}}


def item(part: Part, status: str) -> dict[str, Any]:
    """A part as its output item; in progress, an item's text is empty (its deltas follow)."""
    text = part.text if status == "completed" else ""
    if part.kind == THINKING:
        return {"type": "reasoning", "id": item_id(part), "summary": [], "status": status,
                "content": [{"type": "reasoning_text", "text": text}] if text else []}
    if part.kind == CALL:
        return {"type": "function_call", "id": item_id(part), "call_id": part.call.id, "name": part.call.name,
                "arguments": text, "status": status}
    return {"type": "message", "id": item_id(part), "role": "assistant", "status": status,
            "content": [text_part(text)] if status == "completed" else []}


def item_id(part: Part) -> str:
    return ID_STARTS[part.kind] + part.id


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class Events:
    """One streamed response: response.created and in_progress, each part's item events, then
    response.completed (or response.incomplete); every event numbered in order."""

    def __init__(self, run: Run, head: dict[str, Any]):
        self.run = run
        self.head = head
        self._numbers = itertools.count()

    def all(self) -> Iterator[dict[str, Any]]:
        started = {**self.head, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
        yield self._event("response.created", response=started)
        yield self._event("response.in_progress", response=started)
        parts = AnswerParts(self.run.job)
        for piece in self.run:
            yield from self._steps(parts.feed(piece.text))
        if self.run.finish_reason is None:
            return  # the client left
        yield from self._steps(parts.finish())
        final = finished(self.head, self.run, [item(part, "completed") for part in parts.parts])
        yield self._event("response." + final["status"], response=final)

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(self._numbers), **fields}

    def _steps(self, steps: list[Step]) -> Iterator[dict[str, Any]]:
        for step in steps:
            part = step.part
            at = {"output_index": part.index}
            where = {"item_id": item_id(part), **at}
            if step.what == OPEN:
                yield self._event("response.output_item.added", item=item(part, "in_progress"), **at)
                if part.kind == TEXT:
                    yield self._event("response.content_part.added", content_index=0, part=text_part(""), **where)
            elif step.what == ADD:
                yield self._delta(part.kind, step.text, where)
            else:
                yield from self._done(part, where)

    def _delta(self, kind: str, text: str, where: dict[str, Any]) -> dict[str, Any]:
        if kind == CALL:
            return self._event("response.function_call_arguments.delta", delta=text, **where)
        if kind == THINKING:
            return self._event("response.reasoning_text.delta", content_index=0, delta=text, **where)
        return self._event("response.output_text.delta", content_index=0, delta=text, logprobs=[], **where)

    def _done(self, part: Part, where: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if part.kind == CALL:
            yield self._event("response.function_call_arguments.done", arguments=part.text, name=part.call.name,
                              **where)
        elif part.kind == THINKING:
            yield self._event("response.reasoning_text.done", content_index=0, text=part.text, **where)
        else:
            yield self._event("response.output_text.done", content_index=0, text=part.text, logprobs=[], **where)
            yield self._event("response.content_part.done", content_index=0, part=text_part(part.text), **where)
        yield self._event("response.output_item.done", item=item(part, "completed"),
                          output_index=where["output_index"])
