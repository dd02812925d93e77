"""A conversation with tool use, as the chat template can take it. A template that renders calls gets each
call's arguments as it reads them (an object, or OpenAI's JSON text), as llama-server gives them. One that
knows nothing of tool use gets the calls and their results written into the messages in llama.cpp's generic
JSON format, and the tools described in the system message, as llama.cpp's template polyfills (minja) did;
today's llama-server renders such a template without them."""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from kinetic.chat.capabilities import Capabilities
from kinetic.errors import ChatTemplateError

GENERIC_CALL = '{"tool_call": {"name": "<the tool\'s name>", "arguments": {<its arguments>}}}'


def with_tool_use(messages: list[dict[str, Any]], capabilities: Capabilities,
                  tools: Optional[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    """messages ready for the template; tools: those offered to the model (None: none, or hidden)."""
    if capabilities.tool_calls:
        return [with_arguments(m, as_object=capabilities.object_arguments) for m in messages]
    if capabilities.tools:
        return messages
    messages = [generic_message(m) for m in messages]
    return with_system_text(messages, tools_described(tools)) if tools else messages


def with_arguments(message: dict[str, Any], as_object: bool) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not isinstance(calls, list):
        return message
    return {**message, "tool_calls": [call_with_arguments(call, as_object) for call in calls]}


def call_with_arguments(call: Any, as_object: bool) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or "arguments" not in function:
        return call
    return {**call, "function": {**function, "arguments": arguments_as(function["arguments"], as_object)}}


def arguments_as(arguments: Any, as_object: bool) -> Any:
    if as_object and isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            raise ChatTemplateError(f"a tool call's arguments are not JSON: {arguments[:60]!r}") from None
    if not as_object and not isinstance(arguments, str):
        return json.dumps(arguments, ensure_ascii=False)
    return arguments


def generic_message(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant's calls as its content's JSON, a tool's result as a user message holding it."""
    if message.get("role") == "tool":
        response = {"tool": message.get("name", ""), "content": message.get("content", ""),
                    "tool_call_id": message.get("tool_call_id", "")}
        return {"role": "user", "content": json.dumps({"tool_response": response}, indent=2, ensure_ascii=False)}
    calls = message.get("tool_calls")
    if message.get("role") != "assistant" or not isinstance(calls, list):
        return message
    written: dict[str, Any] = {"tool_calls": [generic_call(call) for call in calls]}
    if message.get("content"):
        written["content"] = message["content"]
    kept = {key: value for key, value in message.items() if key != "tool_calls"}
    return {**kept, "content": json.dumps(written, indent=2, ensure_ascii=False)}


def generic_call(call: Any) -> dict[str, Any]:
    function = call.get("function", {}) if isinstance(call, dict) else {}
    written = {"name": function.get("name", ""), "arguments": arguments_as(function.get("arguments", {}), True)}
    return {**written, **({"id": call["id"]} if call.get("id") else {})}


def tools_described(tools: Sequence[dict[str, Any]]) -> str:
    return ("You can call any of the following tools to satisfy the user's requests: "
            f"{json.dumps(list(tools), indent=2, ensure_ascii=False)}\n\n"
            f"To call a tool, answer with only this JSON object:\n\n{GENERIC_CALL}")


def with_system_text(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """text added to the first message when it is a system one (after a blank line), else as a new one."""
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        return [{**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]
