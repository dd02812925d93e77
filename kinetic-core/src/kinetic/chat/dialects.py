"""Template families whose earlier turns' reasoning llama-server passes otherwise than as reasoning_content:
gpt-oss (and LLM-jp's Harmony) and LFM2 read it as `thinking`, Ministral 3 as a content block."""

from __future__ import annotations

from typing import Any, Callable

REASONING = "reasoning_content"
Adapt = Callable[[dict[str, Any]], dict[str, Any]]


def is_ministral_3(source: str) -> bool:
    return all(tag in source for tag in ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]")) and "[CALL_ID]" not in source


def is_harmony(source: str) -> bool:
    return "chat_format=llm-jp-harmony-v1" in source or "<|channel|>" in source


def is_lfm2(source: str) -> bool:
    tool_list = "<|tool_list_start|>" in source and "<|tool_list_end|>" in source
    return tool_list or ("List of tools: [" in source and "<|tool_list_start|>" not in source)


def reasoning_as_thinking(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "thinking": message[REASONING]} if REASONING in message else message


def harmony_message(message: dict[str, Any]) -> dict[str, Any]:
    """The reasoning as `thinking`; a message with tool calls and reasoning loses its content."""
    if REASONING in message and message.get("tool_calls"):
        message = {key: value for key, value in message.items() if key != "content"}
    return reasoning_as_thinking(message)


def ministral_message(message: dict[str, Any]) -> dict[str, Any]:
    """A system or assistant message's content as blocks: its reasoning as a thinking block, then its text."""
    if message.get("role") not in ("system", "assistant"):
        return message
    content = message.get("content")
    blocks = [{"type": "thinking", "thinking": message[REASONING]}] if REASONING in message else []
    blocks += [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return {**{key: value for key, value in message.items() if key != REASONING}, "content": blocks}


DIALECTS: tuple[tuple[Callable[[str], bool], Adapt], ...] = (
    (is_ministral_3, ministral_message),
    (is_harmony, harmony_message),
    (is_lfm2, reasoning_as_thinking),
)


def dialect_of(source: str) -> Adapt | None:
    """How messages are adapted to the template's family, the first that matches in llama.cpp's order."""
    return next((adapt for matches, adapt in DIALECTS if matches(source)), None)
