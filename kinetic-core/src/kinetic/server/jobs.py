"""Request bodies into Jobs: the prompt (chat template or raw text), the limits, stops and sampler fields."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from kinetic.chat.harmony import writes_harmony
from kinetic.constraints import GrammarError
from kinetic.server.constraints import request_grammar, requested_schema
from kinetic.server.content_parts import CHAT, joined_text
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, json_type
from kinetic.server.infill import suffix_prompt
from kinetic.server.llama_prompt import completion_tokens
from kinetic.server.logprobs import MAX_TOP
from kinetic.server.reasoning import thinking_start
from kinetic.server.sampling import sampling_overrides
from kinetic.server.served import ServedModel, Job
from kinetic.server.tool_calls import calls_grammar, offered_tools
from kinetic.tools import ToolRequest
from kinetic.tools.formats.harmony import json_answer

MAX_STOPS = 16


def refuse_unsupported(fields: Fields) -> None:
    """The fields of the docs' table this server cannot honour yet: refused, never silently ignored."""
    n = fields.integer("n", 1)
    if n != 1:
        raise bad_request(f"n must be 1 (one answer per request), not {n}", "n")
    if fields.boolean("echo"):
        raise bad_request("echo is not supported: the prompt is not repeated in the answer", "echo")
    if fields.boolean("receipt"):
        raise bad_request("receipts come from /v1/chat/completions and /v1/completions; send this request "
                          "without receipt", "receipt")


def refuse_tools(fields: Fields) -> None:
    """Tools need a chat: the template is what shows them to the model."""
    if fields.body.get("tools"):
        raise bad_request("tools are offered through the chat template; use /v1/chat/completions", "tools")


def max_tokens(fields: Fields, *names: str) -> int:
    """The first of names that is set, at least 1; -1 when none is (until the answer ends or the context is full)."""
    for name in names:
        value = fields.integer(name)
        if value is not None:
            if value < 1:
                raise bad_request(f"{name} must be at least 1", name)
            return value
    return -1


def job(served: ServedModel, fields: Fields, prompt: list[int], prompt_text: str, limit: int,
        top_logprobs: Optional[int], thinking: Optional[bool] = None, harmony: bool = False, **tool_use: Any) -> Job:
    """tool_use: a chat with tools offered gives its grammar and tool_format."""
    return Job(prompt=prompt, overrides=sampling_overrides(fields, served.session.tokenizer),
               max_tokens=limit, stops=fields.strings("stop", MAX_STOPS), top_logprobs=top_logprobs,
               prompt_text=prompt_text, thinking=thinking, harmony=harmony, cache_prompt=fields.boolean("cache_prompt", True),
               stream=fields.boolean("stream"), n_indent=fields.integer("n_indent", 0, 0),
               t_max_predict_ms=fields.integer("t_max_predict_ms", 0, -1),
               **{"grammar": request_grammar(fields), **tool_use})


def chat_logprobs(fields: Fields) -> Optional[int]:
    """logprobs: true and top_logprobs 0 to 20 -> the number of alternatives; None without logprobs."""
    top = fields.integer("top_logprobs", 0, 0, MAX_TOP)
    return top if fields.boolean("logprobs") else None


def chat_messages(fields: Fields) -> list[dict[str, Any]]:
    messages = fields.body.get("messages")
    if not isinstance(messages, list):
        raise bad_request(f"messages must be a list of messages, not {json_type(messages)}", "messages")
    if not messages:
        raise bad_request("messages must not be empty", "messages")
    prepared = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise bad_request(f"{where} must be an object with a role", "messages")
        prepared.append({**message, "content": None if message.get("content") is None
                         else joined_text(message["content"], f"{where}.content", CHAT)})
    return prepared


class RenderedChat(NamedTuple):
    """A chat request's prompt, the tools it offers and the template's keyword arguments."""

    prompt: list[int]
    offered: Optional[ToolRequest]
    kwargs: dict[str, Any]


def render_chat(served: ServedModel, fields: Fields) -> RenderedChat:
    """The chat body's messages and tools through the template: chat_job's first step, and all that the
    token-counting routes (/v1/messages/count_tokens, /v1/responses/input_tokens) need."""
    messages = chat_messages(fields)
    offered = offered_tools(fields)
    kwargs = fields.mapping("chat_template_kwargs")
    return RenderedChat(served.session.chat_prompt(messages, offered.tools if offered else None, **kwargs),
                        offered, kwargs)


def chat_job(served: ServedModel, fields: Fields) -> Job:
    refuse_unsupported(fields)
    prompt, offered, kwargs = render_chat(served, fields)
    text = served.session.tokenizer.decode(prompt)
    source = served.session.template.source
    harmony = writes_harmony(source)
    thinking = None if harmony else thinking_start(source, text, kwargs)
    tool_use = {} if offered is None else {"grammar": calls_grammar(served, offered, fields, thinking),
                                           "tool_format": served.tool_format, "tool_functions": offered.functions}
    if harmony and offered is None:
        tool_use.update(harmony_answer(served, fields))
    return job(served, fields, prompt, text, max_tokens(fields, "max_completion_tokens", "max_tokens"),
               chat_logprobs(fields), thinking, harmony=harmony, **tool_use)


def harmony_answer(served: ServedModel, fields: Fields) -> dict[str, Any]:
    """A gpt-oss chat asking for JSON (response_format, json_schema): the grammar of a harmony answer whose final
    message is that JSON, its reasoning free before it; nothing for free text or a GBNF grammar of the client's."""
    schema = None if fields.has("grammar") else requested_schema(fields)
    if schema is None:
        return {}
    try:
        return {"grammar": json_answer(schema, served.tool_markup)}
    except GrammarError as error:
        raise bad_request(str(error), "json_schema" if fields.has("json_schema") else "response_format") from None


def prompt_tokens(served: ServedModel, prompt: Any) -> tuple[list[int], str]:
    """A raw prompt (llama_prompt.completion_tokens: text, token ids or both) as tokens, and as the text
    /slots and /completion show: the tokens decoded, special tokens included, as llama-server shows them."""
    tokens = completion_tokens(served.session.tokenizer, prompt)
    return tokens, served.session.tokenizer.decode(tokens)


def completion_prompt(served: ServedModel, fields: Fields) -> tuple[list[int], str]:
    """/v1/completions' prompt; with a suffix, the fill-in-the-middle prompt around it (infill.suffix_prompt)."""
    suffix = fields.string("suffix")
    if not suffix:
        return prompt_tokens(served, fields.body.get("prompt"))
    tokenizer = served.session.tokenizer
    tokens = suffix_prompt(tokenizer, fields.body.get("prompt"), suffix, served.context_length)
    return tokens, tokenizer.decode(tokens)


def completion_job(served: ServedModel, fields: Fields) -> Job:
    refuse_unsupported(fields)
    refuse_tools(fields)
    prompt, text = completion_prompt(served, fields)
    top = fields.integer("logprobs", None, 0, MAX_TOP)
    return job(served, fields, prompt, text, max_tokens(fields, "max_tokens"), top)
