"""Server-sent events: one `data: JSON` event per chunk; OpenAI streams end with `data: [DONE]`. Named streams
(Anthropic's and the Responses API's) put each chunk's type on an `event:` line before its data."""

from __future__ import annotations

import contextlib
import json
from typing import Any, Callable, Iterable, Iterator

import falcon

from kinetic.errors import KineticError
from kinetic.server.errors import error_body, log

DONE = b"data: [DONE]\n\n"
Failure = Callable[[int, str], dict[str, Any]]  # (status, message) -> the error event's payload


def event(payload: dict[str, Any], named: bool = False) -> bytes:
    data = b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    return b"event: " + payload["type"].encode() + b"\n" + data if named else data


def guarded(chunks: Iterator[dict[str, Any]], done: bool, named: bool = False,
            failure: Failure = error_body) -> Iterator[bytes]:
    """The chunks as events; a failure after the 200 went out becomes an error event, then the end.
    Closing this stream (the client left) closes the chunks, which stops the generation."""
    try:
        with contextlib.closing(chunks):
            for chunk in chunks:
                yield event(chunk, named)
    except KineticError as error:
        yield event(failure(400, str(error)), named)
    except Exception as error:  # the server goes on; the client learns what happened
        log.exception("unexpected error while streaming")
        yield event(failure(500, f"internal error: {type(error).__name__}: {error}"), named)
    if done:
        yield DONE


def stream(resp: falcon.Response, chunks: Callable[[], Iterable[dict[str, Any]]], done: bool = True,
           named: bool = False, failure: Failure = error_body) -> None:
    """Answer with an event stream; the chunks are made lazily, while the response is sent. named: each chunk
    has a "type", its event's name; failure: the payload of an error event (named streams give it a type)."""
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-cache")
    resp.set_header("X-Accel-Buffering", "no")
    resp.stream = guarded(_lazy(chunks), done, named, failure)


def _lazy(make: Callable[[], Iterable[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    yield from make()
