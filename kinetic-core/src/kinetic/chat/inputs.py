"""What a chat template is given: plain JSON copies of the caller's messages, tools and variables,
prepared as transformers' apply_chat_template prepares them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from kinetic.errors import ChatTemplateError

# The names a message's reasoning comes under; templates read the first, gpt-oss templates `thinking`.
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


def template_variables(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None,
                       add_generation_prompt: bool, special_tokens: Mapping[str, str],
                       kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Everything a template sees; kwargs (chat_template_kwargs) may override the special tokens, as in transformers."""
    try:
        return {
            **special_tokens,
            "documents": None,
            **plain(kwargs),
            "messages": prepare_messages(messages),
            "tools": plain(tools),
            "add_generation_prompt": add_generation_prompt,
        }
    except RecursionError:
        raise ChatTemplateError("the messages, tools or variables are nested too deeply for a chat template") from None


def plain(value: Any) -> Any:
    """A copy of value made only of JSON types, so a template never meets an object with methods of its own."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {plain(key): plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, tuple):
        return tuple(plain(item) for item in value)
    raise ChatTemplateError(f"a chat template takes only JSON values; got one of type {type(value).__name__}")


def prepare_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages without their null fields (templates handle a missing key better than a null one),
    with any reasoning given under each of REASONING_FIELDS' first two names."""
    prepared = []
    for message in messages:
        if not isinstance(message, Mapping):
            raise ChatTemplateError(f"a chat message must be an object, not a {type(message).__name__}")
        fields = {key: value for key, value in plain(message).items() if value is not None}
        prepared.append(with_reasoning_aliases(fields))
    return prepared


def with_reasoning_aliases(message: dict[str, Any]) -> dict[str, Any]:
    reasoning = next((message[key] for key in REASONING_FIELDS if message.get(key) is not None), None)
    if reasoning is None:
        return message
    return {"thinking": reasoning, **message, "reasoning_content": reasoning}
