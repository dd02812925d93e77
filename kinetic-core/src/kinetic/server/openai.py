"""The OpenAI routes: /v1/models, /v1/chat/completions and /v1/completions."""

from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Iterator, Optional, Union

import falcon

from kinetic import __version__

from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_job, completion_job
from kinetic.server.llama_answer import timings
from kinetic.server.logprobs import TokenLogprobs
from kinetic.server.chat_answer import ChatStream, chat_message, finish_reason
from kinetic.server.receipts import check_receipt, receipt_asked, receipt_for
from kinetic.server.served import Cancelled, ServedModel, Piece, Run, never
from kinetic.server.sse import stream

# the build an answer came from, as llama-server's system_fingerprint names its build
FINGERPRINT = f"kinetic-{__version__}"


def cancelled_by(req: falcon.Request):
    """True once the client has gone (waitress tells, when its channel_request_lookahead is on)."""
    return req.env.get("waitress.client_disconnected") or (lambda: False)


class Models:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        resp.media = {"object": "list", "data": [{
            "id": self.served.name, "object": "model", "created": self.served.created, "owned_by": "kinetic",
            "context_length": self.served.context_length}]}


class Completions:
    """POST /v1/chat/completions (chat=True) or /v1/completions."""

    def __init__(self, served: ServedModel, chat: bool):
        self.served = served
        self.chat = chat
        self.kind = "chat.completion" if chat else "text_completion"

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        answer = self.answer(fields, cancelled_by(req))
        if fields.boolean("stream"):
            stream(resp, lambda: answer)
            return
        resp.media = answer

    def answer(self, fields: Fields, cancelled: Cancelled = never) -> Union[dict[str, Any], Iterator[dict[str, Any]]]:
        """The request's answer: the whole object, or with stream its chunks, made as they are taken (the answer
        is generated meanwhile; closing them stops it). The route's, and kinetic.llama_cpp's without HTTP."""
        fields, asked = receipt_asked(fields)
        job = (chat_job if self.chat else completion_job)(self.served, fields)
        run = self.served.run(job, cancelled)
        if asked:
            check_receipt(run)
        given = fields.body.get("messages" if self.chat else "prompt")
        receipt = (lambda text: receipt_for(run, given, text)) if asked else None
        head = {"id": ("chatcmpl-" if self.chat else "cmpl-") + secrets.token_hex(12),
                "created": int(time.time()), "model": self.served.name, "system_fingerprint": FINGERPRINT}
        if fields.boolean("stream"):
            return self._chunks(run, head, bool(fields.mapping("stream_options").get("include_usage")), receipt)
        pieces = list(run)
        choice = self._choice(run, pieces)
        answer = {**head, "object": self.kind, "choices": [choice], "usage": run.usage.report(), "timings": timings(run)}
        if receipt is None:
            return answer
        return {**answer, "receipt": receipt(choice["message"]["content"] or "" if self.chat else choice["text"])}

    def _choice(self, run: Run, pieces: list[Piece]) -> dict[str, Any]:
        text = run.cut("".join(piece.text for piece in pieces))
        logprobs = self._logprobs(run, pieces)
        if self.chat:
            message, called = chat_message(run.job, text)
            return {"index": 0, "message": message, "logprobs": logprobs,
                    "finish_reason": finish_reason(run.finish_reason, called)}
        return {"index": 0, "text": text, "logprobs": logprobs, "finish_reason": run.finish_reason}

    def _logprobs(self, run: Run, pieces: list[Piece], offset: int = 0) -> Optional[dict[str, Any]]:
        if run.job.top_logprobs is None:
            return None
        scored = [piece for piece in pieces if piece.logprobs is not None]
        tokenizer = run.served.session.tokenizer
        if self.chat:
            return {"content": [chat_entry(tokenizer, piece.logprobs) for piece in scored]}
        return legacy_logprobs(tokenizer, pieces, offset)

    def _chunks(self, run: Run, head: dict[str, Any], include_usage: bool,
                receipt: Optional[Callable[[str], Optional[dict[str, Any]]]] = None) -> Iterator[dict[str, Any]]:
        """The stream's chunks; receipt(the answer's text: a chat's content, its reasoning and calls split off), when
        given, goes in the last."""
        kind = self.kind + ".chunk" if self.chat else self.kind
        said: list[str] = []
        extra = {"usage": None} if include_usage else {}

        def chunk(body: dict[str, Any], logprobs: Optional[dict[str, Any]] = None,
                  reason: Optional[str] = None) -> dict[str, Any]:
            choice = {"index": 0, **({"delta": body} if self.chat else body), "logprobs": logprobs,
                      "finish_reason": reason}
            return {**head, "object": kind, "choices": [choice], **extra}

        if self.chat:
            yield chunk({"role": "assistant", "content": ""})
        offset = 0
        answer = ChatStream(run.job) if self.chat else None
        for piece in run:
            if not piece.text and piece.logprobs is None:
                continue
            logprobs = self._logprobs(run, [piece], offset)
            if logprobs and not self.chat:
                offset += sum(len(token) for token in logprobs["tokens"])
            if answer is None:
                said.append(piece.text)
                yield chunk({"text": piece.text}, logprobs)
                continue
            for body in answer.feed(piece.text):
                said.append(body.get("content", ""))
                yield chunk(body, logprobs)
                logprobs = None
        if run.finish_reason is None:
            return  # the client left: nothing more to say
        for body in answer.finish() if answer is not None else ():
            said.append(body.get("content", ""))
            yield chunk(body)
        called = answer is not None and answer.calls > 0
        last = chunk({} if self.chat else {"text": ""}, reason=finish_reason(run.finish_reason, called))
        ending = {"timings": timings(run), **({"receipt": receipt("".join(said))} if receipt else {})}
        if not include_usage:
            yield {**last, **ending}
            return
        yield last
        yield {**head, "object": kind, "choices": [], "usage": run.usage.report(), **ending}

def _token_text(tokenizer, token: int) -> tuple[str, list[int]]:
    raw = tokenizer.token_bytes(token, special=True)
    return raw.decode("utf-8", "replace"), list(raw)


def chat_entry(tokenizer, scored: TokenLogprobs) -> dict[str, Any]:
    """One token of choices[].logprobs.content: its text, bytes, log-probability and the alternatives."""
    def one(token: int, logprob: float) -> dict[str, Any]:
        text, raw = _token_text(tokenizer, token)
        return {"token": text, "logprob": logprob, "bytes": raw}

    return {**one(scored.token, scored.logprob), "top_logprobs": [one(t, lp) for t, lp in scored.top]}


def legacy_logprobs(tokenizer, pieces: list[Piece], offset: int) -> dict[str, Any]:
    """/v1/completions' shape: tokens, token_logprobs, top_logprobs ({text: logprob}) and text_offset,
    where each token's offset counts the text of the answer's tokens before it, from `offset` on."""
    out: dict[str, list] = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    for piece in pieces:
        if piece.logprobs is not None:
            scored = piece.logprobs
            text = _token_text(tokenizer, scored.token)[0]
            out["tokens"].append(text)
            out["token_logprobs"].append(scored.logprob)
            out["top_logprobs"].append({_token_text(tokenizer, t)[0]: lp for t, lp in scored.top})
            out["text_offset"].append(offset)
            offset += len(text)
    return out
