"""llama-server's own routes: /completion, /tokenize, /detokenize, /props, /slots, /health and /metrics."""

from __future__ import annotations

from typing import Any, Iterator, Optional

from kinetic import __version__
from kinetic.errors import ChatTemplateError
from kinetic.sampling.settings import resolve_settings
from kinetic.server.defaults import props_params
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import job, prompt_tokens, refuse_tools, refuse_unsupported
from kinetic.server.openai import cancelled_by
from kinetic.server.served import ServedModel, Run, settings_report
from kinetic.server.sse import stream


class Completion:
    """POST /completion: continue a prompt (text or token ids), as llama-server does."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        refuse_unsupported(fields)
        refuse_tools(fields)
        prompt, text = prompt_tokens(self.served, fields.body.get("prompt"), allow_ids=True)
        limit = fields.integer("n_predict", -1)  # -1 or 0: no limit, as kinetic run's -n
        run = self.served.run(job(self.served, fields, prompt, text, limit, None), cancelled_by(req))
        if fields.boolean("stream"):
            stream(resp, lambda: self._events(run), done=False)
            return
        content = "".join(piece.text for piece in run)
        resp.media = self._final(run, content)

    def _events(self, run: Run) -> Iterator[dict[str, Any]]:
        for piece in run:
            if piece.text:
                yield {"index": 0, "content": piece.text, "tokens": [], "stop": False, "id_slot": 0}
        if run.finish_reason is not None:
            yield self._final(run, "")

    def _final(self, run: Run, content: str) -> dict[str, Any]:
        stop_type = "word" if run.stop_word else {"stop": "eos", "length": "limit"}.get(run.finish_reason, "none")
        t = run.timings
        return {
            "index": 0, "content": content, "tokens": [], "id_slot": 0, "stop": True, "model": self.served.name,
            "tokens_predicted": run.usage.completion_tokens, "tokens_evaluated": run.usage.prompt_tokens,
            "generation_settings": settings_report(run.settings), "prompt": run.job.prompt_text,
            "has_new_line": "\n" in content, "truncated": False, "stop_type": stop_type,
            "stopping_word": run.stop_word, "tokens_cached": run.usage.cached_tokens,
            "timings": timings_report(t.prompt_tokens, t.prompt_seconds, run.usage.completion_tokens,
                                      t.generate_seconds),
        }


def timings_report(prompt_n: int, prompt_s: float, predicted_n: int, predicted_s: float) -> dict[str, float]:
    def per(n: int, seconds: float) -> tuple[float, float]:
        return (seconds * 1000 / n if n else 0.0), (n / seconds if seconds > 0 else 0.0)

    prompt_per_token, prompt_per_second = per(prompt_n, prompt_s)
    predicted_per_token, predicted_per_second = per(predicted_n, predicted_s)
    return {"prompt_n": prompt_n, "prompt_ms": prompt_s * 1000, "prompt_per_token_ms": prompt_per_token,
            "prompt_per_second": prompt_per_second, "predicted_n": predicted_n, "predicted_ms": predicted_s * 1000,
            "predicted_per_token_ms": predicted_per_token, "predicted_per_second": predicted_per_second}


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
        resp.media = [slot.report.report(self.served.context_length) for slot in self.served.pool.slots]


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
