"""An Anthropic Messages request as the chat route's body, so that it takes the chat route's path (template,
tools, grammar, slots): system and content blocks become chat messages, tools and tool_choice OpenAI's,
thinking the template's enable_thinking. Each field is checked here, so that a 400 names Anthropic's field."""

from __future__ import annotations

import json
from typing import Any, Optional

from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, json_type
from kinetic.server.jobs import MAX_STOPS

SAMPLERS = ("temperature", "top_p", "top_k")  # the same names in both APIs
# thinking's type -> enable_thinking; None leaves it to the template (adaptive, between_tools: the model decides)
THINKING = {"enabled": True, "disabled": False, "adaptive": None, "between_tools": None}


def chat_body(body: dict[str, Any]) -> dict[str, Any]:
    """The chat route's body for an Anthropic one (max_tokens is checked by the route that needs it)."""
    fields = Fields(body)
    chat: dict[str, Any] = {"messages": system_messages(body.get("system")) + conversation(body.get("messages")),
                            "stream": fields.boolean("stream"), "stop": list(fields.strings("stop_sequences",
                                                                                             MAX_STOPS))}
    chat.update({name: body[name] for name in SAMPLERS if name in body})
    fields.mapping("metadata")  # accepted: user_id is Anthropic's for abuse reports
    tools = fields.body.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise bad_request(f"tools must be a list of tools, not {json_type(tools)}")
        chat["tools"] = [chat_tool(tool, i) for i, tool in enumerate(tools)]
        chat.update(tool_choice(fields.mapping("tool_choice")))
    chat.update(output_format(fields.mapping("output_config")))
    kwargs = {**fields.mapping("chat_template_kwargs"), **thinking(fields.mapping("thinking"), body.get("max_tokens"))}
    return {**chat, "chat_template_kwargs": kwargs} if kwargs else chat


def max_tokens(fields: Fields) -> int:
    """Required, as Anthropic's API requires it; it bounds thinking and answer together."""
    value = fields.integer("max_tokens", None, 0)
    if value is None:
        raise bad_request("max_tokens is required: the most tokens the answer may have", "max_tokens")
    if value == 0:
        raise bad_request("max_tokens 0 (warming the prompt cache without an answer) is not served here; send "
                          "the conversation as a chat completion's body to POST /v1/prefill", "max_tokens")
    return value


def system_messages(system: Any) -> list[dict[str, Any]]:
    """system: a string or a list of text blocks, as one system message."""
    if system is None:
        return []
    text = system if isinstance(system, str) else block_text(system, "system")
    return [{"role": "system", "content": text}]


def block_text(blocks: Any, where: str) -> str:
    """A list of text blocks (cache_control and citations aside) joined."""
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and b.get("type") == "text" and isinstance(
            b.get("text"), str) for b in blocks):
        raise bad_request(f'{where} must be a string or a list of {{"type": "text", "text": "..."}} blocks')
    return "".join(block["text"] for block in blocks)


def conversation(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise bad_request("messages must be a non-empty list of {\"role\", \"content\"} messages")
    chat = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise bad_request(f'{where}.role must be "user" or "assistant" (system goes in the system field)')
        content = message.get("content")
        if isinstance(content, str):
            chat.append({"role": role, "content": content})
        elif isinstance(content, list):
            chat += (assistant_turn if role == "assistant" else user_turn)(content, where)
        else:
            raise bad_request(f"{where}.content must be a string or a list of content blocks, not {json_type(content)}")
    return chat


def kind_of(block: Any, where: str) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind in ("image", "document"):
        raise bad_request(f"{where}: this model reads only text; {kind} blocks need a vision model")
    if not isinstance(kind, str):
        raise bad_request(f"{where} must be a content block with a type")
    return kind


def user_turn(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """A user's blocks in order: each tool_result a tool message, each run of text blocks a user message."""
    chat: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        kind = kind_of(block, at)
        if kind == "tool_result":
            chat.append(tool_result(block, at))
        elif kind == "text":
            text = block_text([block], at)
            if chat and chat[-1]["role"] == "user":
                chat[-1]["content"] += text
            else:
                chat.append({"role": "user", "content": text})
        else:
            raise bad_request(f"{at}: a user message holds text and tool_result blocks, not {kind}")
    return chat


def tool_result(block: dict[str, Any], where: str) -> dict[str, Any]:
    """A tool_result as the chat route's tool message (an error result reads as its text, as the model sees it)."""
    content = block.get("content", "")
    if not isinstance(block.get("tool_use_id"), str):
        raise bad_request(f"{where}.tool_use_id must be the id of the tool_use it answers")
    text = content if isinstance(content, str) else block_text(content, f"{where}.content")
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": text}


def assistant_turn(blocks: list[Any], where: str) -> list[dict[str, Any]]:
    """An assistant's blocks as one message: its text, its thinking as reasoning_content, its tool_use blocks
    as tool_calls (redacted thinking, which only Anthropic can read, is left out)."""
    texts, thoughts, calls = [], [], []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        kind = kind_of(block, at)
        if kind == "text":
            texts.append(block_text([block], at))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thoughts.append(block["thinking"])
        elif kind == "tool_use":
            calls.append(tool_use(block, at))
        elif kind != "redacted_thinking":
            raise bad_request(f"{at}: an assistant message holds text, thinking and tool_use blocks, not {kind}")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    return [{**message, "tool_calls": calls} if calls else message]


def tool_use(block: dict[str, Any], where: str) -> dict[str, Any]:
    name, call_id, arguments = block.get("name"), block.get("id"), block.get("input", {})
    if not isinstance(name, str) or not isinstance(call_id, str) or not isinstance(arguments, dict):
        raise bad_request(f"{where}: a tool_use block needs an id, a name and an input object")
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def chat_tool(tool: Any, index: int) -> dict[str, Any]:
    """A client tool ({"name", "description", "input_schema"}) as an OpenAI function tool."""
    where = f"tools[{index}]"
    if not isinstance(tool, dict) or tool.get("type", "custom") != "custom" or "input_schema" not in tool:
        kind = tool.get("type") if isinstance(tool, dict) else None
        own = f"; {kind} is one of Anthropic's own tools, which this server does not run" if kind else ""
        raise bad_request(f"{where} must be a tool with a name and an input_schema{own}")
    function = {"name": tool.get("name"), "parameters": tool["input_schema"]}
    return {"type": "function", "function": {**function, "description": tool.get("description") or ""}}


def tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    """{"type": auto | any | tool (with its name) | none, "disable_parallel_tool_use"} as the chat route's
    tool_choice and parallel_tool_calls (Anthropic lets a reply make several calls unless disabled)."""
    kind = choice.get("type", "auto")
    chosen: Any = {"auto": "auto", "any": "required", "none": "none"}.get(kind)
    if kind == "tool":
        if not isinstance(choice.get("name"), str):
            raise bad_request('tool_choice {"type": "tool"} needs the name of the tool')
        chosen = {"type": "function", "function": {"name": choice["name"]}}
    if chosen is None:
        raise bad_request(f"tool_choice type must be auto, any, tool or none, not {kind!r}")
    parallel = not Fields(choice).boolean("disable_parallel_tool_use")
    return {"tool_choice": chosen, "parallel_tool_calls": parallel}


def thinking(given: dict[str, Any], limit: Any) -> dict[str, Any]:
    """thinking as the template's switch. budget_tokens is checked as Anthropic checks it (below max_tokens);
    the answer's max_tokens bounds thinking and text together."""
    if not given:
        return {}
    kind = given.get("type")
    if kind not in THINKING:
        raise bad_request(f"thinking type must be one of {', '.join(THINKING)}, not {kind!r}")
    if kind == "enabled":
        budget = Fields(given).integer("budget_tokens", None, 1)
        if budget is None or (isinstance(limit, int) and budget >= limit):
            raise bad_request("thinking.budget_tokens must be a number of tokens below max_tokens")
    switch: Optional[bool] = THINKING[kind]
    return {} if switch is None else {"enable_thinking": switch}


def output_format(config: dict[str, Any]) -> dict[str, Any]:
    """output_config.format ({"type": "json_schema", "schema"}) as the chat route's response_format (structured
    output); output_config.effort, a Claude model's, has no counterpart and is accepted."""
    given = config.get("format")
    if given is None:
        return {}
    if not isinstance(given, dict) or given.get("type") != "json_schema" or not isinstance(given.get("schema"), dict):
        raise bad_request('output_config.format must be {"type": "json_schema", "schema": {...}}')
    return {"response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": given["schema"]}}}
