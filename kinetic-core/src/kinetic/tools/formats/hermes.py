"""Hermes 2 Pro, Qwen2.5, Qwen3: each call a JSON object {"name", "arguments"} between <tool_call> and
</tool_call> (NousResearch's Hermes function-calling format; llama.cpp's models/templates/ Hermes and Qwen)."""

from __future__ import annotations

import json
import re
from typing import Sequence

from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat, one_of_schemas
from kinetic.tools.request import Tool

OPEN, CLOSE = "<tool_call>", "</tool_call>"
CALL = re.compile(rf"\s*{re.escape(OPEN)}\s*(.*?)\s*{re.escape(CLOSE)}\s*", re.DOTALL)


def matches(source: str) -> bool:
    return OPEN in source


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After the first <tool_call>: the call's JSON object and </tool_call>; with parallel, more calls."""
    return "\n".join([
        f"calls: hermes_call {'(HERMES_WS ' + markup.literal(OPEN) + ' hermes_call)*' if parallel else ''}",
        f"hermes_call: HERMES_WS %json {json.dumps(one_of_schemas(tools))} HERMES_WS {markup.literal(CLOSE)}",
        "HERMES_WS: /[ \\t\\r\\n]{0,4}/",
    ])


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    calls, end = [], 0
    while (found := CALL.match(text, end)) is not None:
        try:
            call = json.loads(found.group(1))
        except ValueError:
            break
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            break
        calls.append(ToolCall.of(call["name"], call.get("arguments", {})))
        end = found.end()
    return calls, end


HERMES = ToolFormat(name="Hermes 2 Pro", trigger=OPEN, matches=matches, calls_rule=calls_rule,
                    read_calls=read_calls, markers=(OPEN, CLOSE))
