"""Server-sent events: one `data: JSON` event per chunk; OpenAI streams end with `data: [DONE]`. Named streams
(Anthropic's and the Responses API's) put each chunk's type on an `event:` line before its data."""

from __future__ import annotations

import contextlib
import functools
import json
from typing import Any, Callable, Iterable, Iterator, Optional

import falcon

from kinetic.errors import KineticError
from kinetic.server.errors import error_body, log

DONE = b"data: [DONE]\n\n"
Failure = Callable[[int, str], dict[str, Any]]  # (status, message) -> the error event's payload


def event(payload: dict[str, Any], named: bool = False) -> bytes:
    data = b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
    return b"event: " + payload["type"].encode() + b"\n" + data if named else data


Encode = Callable[[dict[str, Any]], bytes]


def guarded(chunks: Iterator[dict[str, Any]], done: Optional[bytes], encode: Encode = event,
            failure: Failure = error_body) -> Iterator[bytes]:
    """The chunks, each encoded (an event here, a JSON line for Ollama's NDJSON); a failure after the 200 went
    out becomes an error chunk (failure's payload), then the end, done. Closing this stream (the client left)
    closes the chunks, which stops the generation."""
    try:
        with contextlib.closing(chunks):
            for chunk in chunks:
                yield encode(chunk)
    except KineticError as error:
        yield encode(failure(400, str(error)))
    except Exception as error:  # the server goes on; the client learns what happened
        log.exception("unexpected error while streaming")
        yield encode(failure(500, f"internal error: {type(error).__name__}: {error}"))
    if done:
        yield done


def stream(resp: falcon.Response, chunks: Callable[[], Iterable[dict[str, Any]]], done: bool = True,
           named: bool = False, failure: Failure = error_body) -> None:
    """Answer with an event stream; the chunks are made lazily, while the response is sent. named: each chunk
    has a "type", its event's name; failure: the payload of an error event (named streams give it a type)."""
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-cache")
    resp.set_header("X-Accel-Buffering", "no")
    encode = functools.partial(event, named=named)
    resp.stream = guarded(lazy(chunks), DONE if done else None, encode, failure)


def lazy(make: Callable[[], Iterable[dict[str, Any]]]) -> Iterator[dict[str, Any]]:
    yield from make()
