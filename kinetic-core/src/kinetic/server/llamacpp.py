"""llama-server's own routes: /completion, /infill, /apply-template, /tokenize, /detokenize, /props, /slots,
/health and /metrics."""

from __future__ import annotations

from typing import Any, Iterator, Optional

from kinetic import __version__
from kinetic.errors import ChatTemplateError
from kinetic.sampling.settings import resolve_settings
from kinetic.server.defaults import props_params
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, read_json
from kinetic.server.infill import extra_chunks, fim_tokens, infill_prompt
from kinetic.server.jobs import chat_job, job, prompt_tokens, refuse_tools, refuse_unsupported
from kinetic.server.llama_answer import Asked, final, partial, slot_report
from kinetic.server.logprobs import MAX_TOP
from kinetic.server.openai import cancelled_by
from kinetic.server.served import Piece, ServedModel, Run
from kinetic.server.sse import stream


MAX_FIELDS = 64  # response_fields' paths


class Completion:
    """POST /completion: continue a prompt (text, token ids or both), as llama-server does."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        refuse_unsupported(fields)
        refuse_tools(fields)
        prompt, text = self._prompt(fields)
        if fields.boolean("post_sampling_probs"):
            raise bad_request("post_sampling_probs is not supported: n_probs gives the raw logits' "
                              "log-probabilities", "post_sampling_probs")
        asked = Asked(fields.boolean("stream"), fields.boolean("return_tokens"),
                      fields.integer("n_probs", 0, 0, MAX_TOP), fields.strings("response_fields", MAX_FIELDS))
        limit = predict_limit(fields)
        run = self.served.run(job(self.served, fields, prompt, text, limit, asked.n_probs or None),
                              cancelled_by(req))
        if asked.stream:
            stream(resp, lambda: self._events(run, asked), done=False)
            return
        resp.media = final(run, asked, self.served.name, list(run))

    def _prompt(self, fields: Fields) -> tuple[list[int], str]:
        return prompt_tokens(self.served, fields.body.get("prompt"))

    def _events(self, run: Run, asked: Asked) -> Iterator[dict[str, Any]]:
        pieces: list[Piece] = []
        n_decoded = 0
        for piece in run:
            pieces.append(piece)
            n_decoded += piece.token is not None
            event = partial(run, piece, n_decoded, asked)
            if event is not None:
                yield event
        if run.finish_reason is not None:
            yield final(run, asked, self.served.name, pieces)


def predict_limit(fields: Fields) -> int:
    """n_predict, or its aliases max_tokens and max_completion_tokens, as llama-server reads them; -1 or 0 when
    none is set: no limit, as kinetic run's -n."""
    given = (fields.integer(name) for name in ("n_predict", "max_tokens", "max_completion_tokens"))
    return next((value for value in given if value is not None), -1)


class Infill(Completion):
    """POST /infill: the code between input_prefix and input_suffix (with input_extra's files before them and
    prompt's start of the middle), for models whose vocabulary has FIM tokens; others get llama-server's 501."""

    def _prompt(self, fields: Fields) -> tuple[list[int], str]:
        tokenizer = self.served.session.tokenizer
        fim_tokens(tokenizer)
        for name in ("input_prefix", "input_suffix"):
            if name not in fields.body:
                raise bad_request(f'"{name}" is required', name)
        if not isinstance(fields.body.get("prompt", ""), str):
            raise bad_request('"prompt" must be a string', "prompt")
        middle = tokenizer.encode(fields.body.get("prompt", ""), add_special=False, parse_special=True)
        tokens = infill_prompt(tokenizer, fields.body["input_prefix"], fields.body["input_suffix"],
                               extra_chunks(fields), middle, self.served.context_length)
        return tokens, tokenizer.decode(tokens)


class ApplyTemplate:
    """POST /apply-template: the chat template applied to a chat request's messages (and tools), as text."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        resp.media = {"prompt": chat_job(self.served, Fields(read_json(req))).prompt_text}


class Tokenize:
    def __init__(self, served: ServedModel):
        self.tokenizer = served.session.tokenizer

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        content = fields.string("content")
        if content is None:
            raise bad_request("content must be a string", "content")
        tokens = self.tokenizer.encode(content, add_special=fields.boolean("add_special"),
                                       parse_special=fields.boolean("parse_special", True))
        if not fields.boolean("with_pieces"):
            resp.media = {"tokens": tokens}
            return
        resp.media = {"tokens": [{"id": token, "piece": self._piece(token)} for token in tokens]}

    def _piece(self, token: int) -> Any:
        """The piece as text, or its byte values when it is not whole UTF-8 (as llama-server gives it)."""
        raw = self.tokenizer.token_bytes(token)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return list(raw)


class Detokenize:
    def __init__(self, served: ServedModel):
        self.tokenizer = served.session.tokenizer

    def on_post(self, req, resp):
        tokens = read_json(req).get("tokens", [])
        n_vocab = self.tokenizer.n_vocab
        if not isinstance(tokens, list) or not all(
                isinstance(t, int) and not isinstance(t, bool) and 0 <= t < n_vocab for t in tokens):
            raise bad_request(f"tokens must be a list of token ids from 0 to {n_vocab - 1}", "tokens")
        resp.media = {"content": self.tokenizer.decode(tokens)}


class Props:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        session = self.served.session
        template = chat_template_source(session)
        chat = template is not None
        defaults = self.served.defaults
        params = props_params(resolve_settings(session.model.metadata, defaults.sampling), defaults.n_predict)
        resp.media = {
            "default_generation_settings": {"n_ctx": self.served.context_length, "model": self.served.name,
                                            "params": {**params, **self._chat_format(chat)}},
            "total_slots": len(self.served.pool.slots), "model_path": str(session.path), "model_alias": self.served.name,
            "chat_template": template or "", **self._template_caps(chat),
            "modalities": {"vision": False, "audio": False}, "build_info": f"kinetic {__version__}",
        }

    def _chat_format(self, chat: bool) -> dict[str, str]:
        """The format tool calls are written and read in, by llama-server's name for it."""
        return {"chat_format": self.served.tool_format.name} if chat else {}

    def _template_caps(self, chat: bool) -> dict[str, Any]:
        """What the chat template takes, under llama-server's names."""
        if not chat:
            return {}
        caps = self.served.session.template.capabilities
        return {"chat_template_caps": {
            "supports_string_content": caps.string_content, "supports_typed_content": caps.typed_content,
            "supports_system_role": caps.system_role, "supports_tools": caps.tools,
            "supports_tool_calls": caps.tool_calls, "supports_object_arguments": caps.object_arguments}}


def chat_template_source(session) -> Optional[str]:
    """The chat template in use (the model's own or --chat-template-file's), None without one."""
    try:
        return session.template.source
    except ChatTemplateError:
        return None


class Slots:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        resp.media = [slot_report(slot.report, self.served.context_length) for slot in self.served.pool.slots]


class Health:
    """/health and /v1/health: ok once the model is loaded (it is, before the app exists), and the slots."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        pool = self.served.pool
        resp.media = {"status": "ok", "slots_idle": len(pool.slots) - pool.busy, "slots_processing": pool.busy}


class Metrics:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        pool = self.served.pool
        resp.content_type = "text/plain; version=0.0.4"
        resp.text = self.served.metrics.prometheus(pool.busy, pool.waiting)
