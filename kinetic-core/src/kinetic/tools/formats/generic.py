"""llama.cpp's generic format, for templates that write no calls of their own: the answer is one JSON object,
{"tool_call": {"name": ..., "arguments": {...}}}, or with parallel calls {"tool_calls": [{...}, ...]}. The
system prompt tells the model so (the lead's polyfill); any template gets it, so it matches every source."""

from __future__ import annotations

import json
import re
from typing import Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat, one_of_schemas
from kinetic.tools.formats.json_call import json_call
from kinetic.tools.formats.rules import quoted
from kinetic.tools.request import Tool

SPACE = re.compile(r"\s*")


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """The object: "tool_call" and one call, or with parallel also "tool_calls" and a list of them."""
    call = one_of_schemas(tools)
    calls = {"type": "array", "items": call, "minItems": 1}
    entries = [(quoted('"tool_call"'), call)] + [(quoted('"tool_calls"'), calls)] * parallel
    return "\n".join([
        "bare_calls: \"{\" WS generic_entry WS \"}\"",
        "generic_entry: " + " | ".join(f"{key} WS \":\" WS {lark_json(value)}"
                                       for key, value in entries),
    ])


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    """Either shape, whatever parallel was."""
    try:
        value, end = json.JSONDecoder().raw_decode(text, SPACE.match(text).end())
    except ValueError:
        return [], 0
    if not isinstance(value, dict):
        return [], 0
    entries = [value["tool_call"]] if "tool_call" in value else value.get("tool_calls")
    calls = [json_call(entry) for entry in entries] if isinstance(entries, list) and entries else [None]
    return ([], 0) if None in calls else (calls, SPACE.match(text, end).end())


GENERIC = ToolFormat(name="Generic", trigger="", matches=lambda source: True, calls_rule=calls_rule,
                     read_calls=read_calls, bare_start="{")
