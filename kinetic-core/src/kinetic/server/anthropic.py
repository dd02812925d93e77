"""Anthropic's Messages API: POST /v1/messages (streamed as Anthropic's named events, or whole) and
/v1/messages/count_tokens. The request takes the chat route's path (anthropic_request.chat_body, jobs.chat_job);
the answer's parts (answer_parts) become content blocks."""

from __future__ import annotations

import itertools
import json
import secrets
from typing import Any, Iterator

from kinetic.server.anthropic_request import chat_body, max_tokens
from kinetic.server.answer_parts import ADD, CALL, OPEN, THINKING, AnswerParts, Part, Step, whole_answer
from kinetic.server.errors import anthropic_error_body
from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_job, render_chat
from kinetic.server.openai import cancelled_by
from kinetic.server.served import Run, ServedModel
from kinetic.server.sse import stream


class Messages:
    """POST /v1/messages."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        body = read_json(req)
        chat = {**chat_body(body), "max_tokens": max_tokens(Fields(body))}
        run = self.served.run(chat_job(self.served, Fields(chat)), cancelled_by(req))
        head = {"id": "msg_" + secrets.token_hex(12), "type": "message", "role": "assistant",
                "model": self.served.name}
        if chat["stream"]:
            stream(resp, lambda: events(run, head), done=False, named=True, failure=anthropic_error_body)
            return
        parts = whole_answer(run.job, "".join(piece.text for piece in run))
        resp.media = {**head, "content": [block(part) for part in parts.parts], **stop_of(run, parts),
                      "usage": usage(run)}


class CountTokens:
    """POST /v1/messages/count_tokens: the prompt's tokens, as the template renders the messages and tools."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        resp.media = {"input_tokens": len(render_chat(self.served, Fields(chat_body(read_json(req)))).prompt)}


def block(part: Part) -> dict[str, Any]:
    """A whole part as its content block (thinking carries an empty signature: nobody signs a local model's)."""
    if part.kind == THINKING:
        return {"type": "thinking", "thinking": part.text, "signature": ""}
    if part.kind == CALL:
        return {"type": "tool_use", "id": part.call.id, "name": part.call.name, "input": json.loads(part.text)}
    return {"type": "text", "text": part.text}


def stop_of(run: Run, parts: AnswerParts) -> dict[str, Any]:
    """stop_reason and stop_sequence: max_tokens, tool_use when the answer calls, stop_sequence, end_turn."""
    if run.finish_reason == "length":
        reason = "max_tokens"
    elif parts.calls:
        reason = "tool_use"
    else:
        reason = "stop_sequence" if run.stop_word else "end_turn"
    return {"stop_reason": reason, "stop_sequence": run.stop_word if reason == "stop_sequence" else None}


def usage(run: Run) -> dict[str, int]:
    """Anthropic counts prompt tokens read from the cache apart from input_tokens."""
    used = run.usage
    return {"input_tokens": used.prompt_tokens - used.cached_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": used.cached_tokens, "output_tokens": used.completion_tokens}


def events(run: Run, head: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """message_start once the prompt is read (its first piece), each part's block events, then message_delta
    (stop_reason, the usage) and message_stop."""
    pieces = iter(run)
    first = list(itertools.islice(pieces, 1))
    yield {"type": "message_start", "message": {**head, "content": [], "stop_reason": None, "stop_sequence": None,
                                                "usage": usage(run)}}
    parts = AnswerParts(run.job)
    for piece in itertools.chain(first, pieces):
        yield from block_events(parts.feed(piece.text))
    if run.finish_reason is None:
        return  # the client left
    yield from block_events(parts.finish())
    yield {"type": "message_delta", "delta": stop_of(run, parts), "usage": usage(run)}
    yield {"type": "message_stop"}


def block_events(steps: list[Step]) -> Iterator[dict[str, Any]]:
    for step in steps:
        index = step.part.index
        if step.what == OPEN:
            yield {"type": "content_block_start", "index": index, "content_block": opened(step.part)}
        elif step.what == ADD:
            yield {"type": "content_block_delta", "index": index, "delta": delta(step.part.kind, step.text)}
        else:
            if step.part.kind == THINKING:
                yield {"type": "content_block_delta", "index": index,
                       "delta": {"type": "signature_delta", "signature": ""}}
            yield {"type": "content_block_stop", "index": index}


def opened(part: Part) -> dict[str, Any]:
    """A block as content_block_start gives it: empty, its deltas follow."""
    if part.kind == THINKING:
        return {"type": "thinking", "thinking": "", "signature": ""}
    if part.kind == CALL:
        return {"type": "tool_use", "id": part.call.id, "name": part.call.name, "input": {}}
    return {"type": "text", "text": ""}


def delta(kind: str, text: str) -> dict[str, str]:
    if kind == THINKING:
        return {"type": "thinking_delta", "thinking": text}
    if kind == CALL:
        return {"type": "input_json_delta", "partial_json": text}
    return {"type": "text_delta", "text": text}
