"""An Ollama request as the body of the OpenAI route that serves it: /api/chat's and /api/generate's fields
(model, options, format, tools, think, keep_alive) checked, then written under the OpenAI and llama-server
names, so that jobs.chat_job and jobs.completion_job make the job as they do for /v1/chat/completions and
/v1/completions (Ollama's api/types.go names the fields)."""

from __future__ import annotations

import re
from typing import Any

from kinetic.sampling.names import SETTINGS
from kinetic.server.errors import ApiError, bad_request
from kinetic.server.fields import Fields, json_type
from kinetic.server.llamacpp import chat_template_source
from kinetic.server.reasoning import thinks
from kinetic.server.served import ServedModel

SAMPLING_OPTIONS = frozenset(name for setting in SETTINGS for name in setting.request)
# Options Ollama reads when it loads a model, which the server's own flags (-c, -t, -ngl, ...) set here, and
# options Ollama no longer applies: accepted, without effect (num_keep: Kinetic never shifts the context).
WITHOUT_EFFECT = frozenset({"num_ctx", "num_batch", "num_gpu", "main_gpu", "use_mmap", "use_mlock", "num_thread",
                            "numa", "low_vram", "vocab_only", "f16_kv", "logits_all", "draft_num_predict",
                            "num_keep", "penalize_newline", "tfs_z"})
THINK_LEVELS = {"low": "low", "medium": "medium", "high": "high", "max": "high"}  # as reasoning_effort
GO_DURATION = re.compile(r"[-+]?(0|((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)")  # Go's time.ParseDuration
REFUSED = {
    "suffix": "suffix (fill in the middle) is not supported on /api/generate; send the text before the gap as prompt",
    "template": "template is not supported: the model's chat template (or --chat-template-file) formats the "
                "prompt; send raw: true with a prompt you formatted yourself",
    "context": "context is not supported: send the conversation as messages to /api/chat",
}


def listed_name(name: str) -> str:
    """The name /api/tags lists a model under: with Ollama's tag, latest unless the name has one."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def requested_model(served: ServedModel, fields: Fields, *names: str) -> str:
    """The model the request names (the first of names that is set), which must be the one served: a name
    matches with or without its :latest tag, in any case, as Ollama matches names."""
    given = next((fields.string(name) for name in names or ("model",) if fields.string(name)), None)
    if not given:
        raise bad_request("model is required", "model")
    if listed_name(given).lower() != listed_name(served.name).lower():
        raise ApiError(404, f"model '{given}' not found")
    return given


def chat_body(served: ServedModel, name: str, fields: Fields) -> dict[str, Any]:
    """/api/chat's body as /v1/chat/completions takes it (no messages: none, which loads the model in Ollama);
    Ollama lets the model make several calls."""
    messages = fields.body.get("messages") or []
    if not isinstance(messages, list):
        raise bad_request(f"messages must be a list of messages, not {json_type(messages)}", "messages")
    tools = {"tools": fields.body["tools"], "parallel_tool_calls": True} if fields.has("tools") else {}
    return {"messages": [openai_message(message) for message in messages], **tools,
            **common_fields(served, name, fields, chat=True)}


def generate_body(served: ServedModel, name: str, fields: Fields) -> dict[str, Any]:
    """/api/generate's body: with raw, as /v1/completions takes it; else as a chat of one user message (and
    the system one), which is how Ollama formats it."""
    for field, refusal in REFUSED.items():
        if fields.body.get(field):
            raise bad_request(refusal, field)
    prompt, system = fields.string("prompt", ""), fields.string("system", "")
    refuse_images(fields.body)
    if fields.boolean("raw"):
        if system:
            raise bad_request("raw mode does not take system: write it into the prompt", "system")
        return {"prompt": prompt, **common_fields(served, name, fields, chat=False)}
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    return {"messages": messages, **common_fields(served, name, fields, chat=True)}


def openai_message(message: Any) -> Any:
    """An Ollama message as OpenAI's: role in lower case, a tool result's tool_name also as name (which
    templates read); tool calls' arguments stay objects (the template adaptation reads both forms)."""
    if not isinstance(message, dict):
        return message
    refuse_images(message)
    role = message.get("role")
    adapted = {key: value for key, value in message.items() if key not in ("images", "tool_name")}
    if isinstance(role, str):
        adapted["role"] = role.lower()
    if isinstance(message.get("tool_name"), str) and "name" not in message:
        adapted["name"] = message["tool_name"]
    return adapted


def refuse_images(holder: dict[str, Any]) -> None:
    if holder.get("images"):
        raise bad_request("this model reads only text; images need a vision model", "images")


def common_fields(served: ServedModel, name: str, fields: Fields, chat: bool) -> dict[str, Any]:
    """options, format, think, logprobs; keep_alive checked (the served model stays loaded)."""
    check_keep_alive(fields.body.get("keep_alive"))
    top = fields.integer("top_logprobs", 0, 0, 20)
    logprobs = fields.boolean("logprobs")
    thinking = thinking_kwargs(served, name, fields.body.get("think"))  # a raw prompt is not split
    if chat:
        shaped = {"logprobs": logprobs, "top_logprobs": top, "chat_template_kwargs": thinking}
    else:
        shaped = {"logprobs": top} if logprobs else {}
    return {**option_fields(fields.mapping("options")), **format_field(fields.body.get("format")), **shaped}


def option_fields(options: dict[str, Any]) -> dict[str, Any]:
    """options as request fields: the sampler settings under their names (Ollama's are llama-server's),
    num_predict as max_tokens (0 or less: no limit, as in Ollama), stop as stop; a name Ollama does not
    know is a 400."""
    unknown = sorted(set(options) - SAMPLING_OPTIONS - WITHOUT_EFFECT - {"num_predict", "stop"})
    if unknown:
        raise bad_request(f"unknown option {unknown[0]!r}; options takes Ollama's names, such as temperature, "
                          "top_k, top_p, num_predict and stop", "options")
    fields = {name: value for name, value in options.items() if name in SAMPLING_OPTIONS}
    predict = Fields(options).integer("num_predict")
    if predict is not None and predict > 0:
        fields["max_tokens"] = predict
    if "stop" in options:
        fields["stop"] = options["stop"]
    return fields


def format_field(given: Any) -> dict[str, Any]:
    """format: "json" (any JSON value) or a JSON schema, as response_format; null or "" for free text."""
    if given is None or given == "":
        return {}
    if given == "json":
        return {"response_format": {"type": "json_object"}}
    if isinstance(given, dict):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "format", "schema": given}}}
    raise bad_request(f'invalid format: {given!r}; expected "json" or a valid JSON Schema object', "format")


def thinking_kwargs(served: ServedModel, name: str, think: Any) -> dict[str, Any]:
    """think as chat_template_kwargs: true or a level turns thinking on (a level also as reasoning_effort),
    false off; unset leaves the template's default, which is on where the model thinks, as in Ollama."""
    if think is None:
        return {}
    if not isinstance(think, (bool, str)) or (isinstance(think, str) and think not in THINK_LEVELS):
        raise bad_request(f'invalid think value: {think!r} (must be "high", "medium", "low", "max", true, or false)',
                          "think")
    if think is False:
        return {"enable_thinking": False}
    if not thinks(chat_template_source(served.session) or ""):
        raise bad_request(f'"{name}" does not support thinking', "think")
    return {"enable_thinking": True, **({"reasoning_effort": THINK_LEVELS[think]} if think is not True else {})}


def check_keep_alive(keep_alive: Any) -> None:
    """keep_alive: seconds or a Go duration ("5m", "-1"); the served model stays loaded whatever it says."""
    if keep_alive is None or isinstance(keep_alive, (int, float)) and not isinstance(keep_alive, bool):
        return
    if not isinstance(keep_alive, str) or not GO_DURATION.fullmatch(keep_alive):
        raise bad_request(f'keep_alive must be a number of seconds or a duration such as "5m", not {keep_alive!r}',
                          "keep_alive")
