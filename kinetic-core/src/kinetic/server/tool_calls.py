"""A chat request's tools: read and checked (a 400 names the field), offered to the template unless
tool_choice is none, and held to the template's call format by a grammar; combined with response_format, an
`auto` reply is either the JSON answer or calls."""

from __future__ import annotations

from typing import Any, Optional

from kinetic.constraints import Grammar, GrammarError
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields
from kinetic.server.served import ServedModel
from kinetic.tools import ToolRequest, ToolsError
from kinetic.tools.grammar import tool_grammar

CONSTRAINTS = ("response_format", "json_schema", "grammar")


def offered_tools(fields: Fields) -> Optional[ToolRequest]:
    """The tools the request offers the model, or None without any; with tool_choice none they are read
    (a bad one is still a 400) and hidden."""
    try:
        tools = ToolRequest.read(fields.body.get("tools"), fields.body.get("tool_choice"),
                                 fields.body.get("parallel_tool_calls"))
    except ToolsError as error:
        raise bad_request(str(error), error.field) from None
    return tools if tools is not None and tools.choice != "none" else None


def calls_grammar(served: ServedModel, tools: ToolRequest, fields: Fields, thinking: Optional[bool]) -> Grammar:
    """The grammar of a reply with tools offered."""
    given = [name for name in CONSTRAINTS if constrains(fields, name)]
    if given and tools.choice == "required":
        raise bad_request(f"a forced tool call cannot be combined with {given[0]}; send one or the other", given[0])
    if "grammar" in given:
        raise bad_request("tools cannot be combined with a grammar; use response_format or json_schema", "grammar")
    try:
        return tool_grammar(served.tool_format, tools, served.tool_markup, thinking, answer_schema(fields))
    except GrammarError as error:
        raise bad_request(str(error), "tools") from None


def constrains(fields: Fields, name: str) -> bool:
    if name == "response_format":
        return fields.mapping("response_format").get("type", "text") != "text"
    return fields.has(name)


def answer_schema(fields: Fields) -> Optional[dict[str, Any]]:
    """The JSON Schema response_format or json_schema asks the answer to follow ({} for any JSON value)."""
    if fields.has("json_schema"):
        return fields.body["json_schema"]
    response_format = fields.mapping("response_format")
    kind = response_format.get("type", "text")
    if kind == "json_object":
        return response_format.get("schema") or {}
    if kind == "json_schema" and isinstance(response_format.get("json_schema"), dict):
        return response_format["json_schema"].get("schema")
    return None
