"""An OpenAI Responses request as the chat route's body, so that it takes the chat route's path: instructions
and input items become chat messages, function tools and tool_choice the chat route's, text.format its
response_format. What needs a stored response or a hosted tool is refused with a 400 naming the field."""

from __future__ import annotations

from typing import Any, Optional

from kinetic.server.content_parts import RESPONSES, joined_text
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, json_type

SAMPLERS = ("temperature", "top_p")
STORED = ("previous_response_id", "conversation")  # they name responses kept by the server, which keeps none
TEXT_PARTS = ("input_text", "output_text")


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    fields = Fields(body)
    for name in STORED:
        if fields.has(name):
            raise bad_request(f"{name} needs responses stored by the server, which keeps none; send the "
                              "whole conversation in input", name)
    if fields.boolean("background"):
        raise bad_request("background responses are not served; send the request without background", "background")
    instructions = fields.string("instructions")
    chat: dict[str, Any] = {
        "messages": ([{"role": "system", "content": instructions}] if instructions else []) + conversation(
            body.get("input")),
        "stream": fields.boolean("stream"), **{name: body[name] for name in SAMPLERS if name in body}}
    limit = fields.integer("max_output_tokens", None, 1)
    if limit is not None:
        chat["max_tokens"] = limit
    if body.get("tools"):
        chat["tools"] = function_tools(body["tools"])
        chat["tool_choice"] = tool_choice(body.get("tool_choice", "auto"))
        chat["parallel_tool_calls"] = fields.boolean("parallel_tool_calls", True)
    chat.update(text_format(fields.mapping("text")))
    effort = fields.mapping("reasoning").get("effort")
    return {**chat, "chat_template_kwargs": {"enable_thinking": False}} if effort == "none" else chat


def conversation(given: Any) -> list[dict[str, Any]]:
    """input: a string (one user message) or a list of items."""
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise bad_request(f"input must be a string or a non-empty list of items, not {json_type(given)}", "input")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(given):
        if not isinstance(item, dict):
            raise bad_request(f"input[{i}] must be an item object", "input")
        add_item(messages, item, f"input[{i}]")
    return messages


def add_item(messages: list[dict[str, Any]], item: dict[str, Any], where: str) -> None:
    """One input item into the chat messages: an assistant's function calls and reasoning join its message."""
    kind = item.get("type", "message")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "system", "developer", "assistant"):
            raise bad_request(f"{where}.role must be user, system, developer or assistant", "input")
        messages.append({"role": role, "content": joined_text(item.get("content"), f"{where}.content", RESPONSES)})
    elif kind == "function_call":
        call = {"id": item.get("call_id"), "type": "function",
                "function": {"name": item.get("name"), "arguments": item.get("arguments")}}
        if not all(isinstance(value, str) for value in (call["id"], *call["function"].values())):
            raise bad_request(f"{where}: a function_call needs call_id, name and arguments strings", "input")
        assistant(messages).setdefault("tool_calls", []).append(call)
    elif kind == "function_call_output":
        if not isinstance(item.get("call_id"), str):
            raise bad_request(f"{where}: a function_call_output needs the call_id it answers", "input")
        messages.append({"role": "tool", "tool_call_id": item["call_id"],
                         "content": joined_text(item.get("output"), f"{where}.output", RESPONSES)})
    elif kind == "reasoning":
        texts = item.get("content") or item.get("summary") or []
        assistant(messages)["reasoning_content"] = joined_text(texts, f"{where}.content", RESPONSES)
    elif kind == "item_reference":
        raise bad_request(f"{where}: item_reference needs items stored by the server, which keeps none", "input")
    else:
        raise bad_request(f"{where}: unknown item type {kind!r}", "input")


def assistant(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message being written: the last one, or a new one."""
    if not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": ""})
    return messages[-1]


def function_tools(tools: Any) -> list[dict[str, Any]]:
    """{"type": "function", "name", "description", "parameters"} as the chat route's tools; OpenAI's hosted
    tools (web search, file search, a computer) have no place on a local server."""
    if not isinstance(tools, list):
        raise bad_request(f"tools must be a list of tools, not {json_type(tools)}", "tools")
    chat = []
    for i, tool in enumerate(tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            raise bad_request(f"tools[{i}] is a {kind} tool; only function tools are served", "tools")
        function = {key: tool[key] for key in ("name", "description", "parameters") if key in tool}
        chat.append({"type": "function", "function": function})
    return chat


def tool_choice(choice: Any) -> Any:
    """auto, none, required, or {"type": "function", "name"} as the chat route's tool_choice."""
    if isinstance(choice, str):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    raise bad_request('tool_choice must be auto, none, required or {"type": "function", "name": ...}', "tool_choice")


def text_format(text: dict[str, Any]) -> dict[str, Any]:
    """text.format ({"type": "text" | "json_object" | "json_schema", "name", "schema", "strict"}) as the
    chat route's response_format."""
    given: Optional[dict[str, Any]] = text.get("format")
    kind = given.get("type") if isinstance(given, dict) else None
    if given is None or kind == "text":
        return {}
    if kind == "json_object":
        return {"response_format": {"type": "json_object"}}
    if kind == "json_schema" and isinstance(given.get("schema"), dict):
        described = {key: given[key] for key in ("name", "schema", "strict") if key in given}
        return {"response_format": {"type": "json_schema", "json_schema": described}}
    raise bad_request('text.format must be {"type": "text"}, {"type": "json_object"} or '
                      '{"type": "json_schema", "name": ..., "schema": {...}}', "text")
