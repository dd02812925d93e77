"""Hermes 2 Pro, Qwen2.5, Qwen3: each call a JSON object {"name", "arguments"} between <tool_call> and
</tool_call> (NousResearch's Hermes function-calling format; llama.cpp's models/templates/ Hermes and Qwen).
Small models of these families also answer with the bare JSON object: read and allowed at the answer's
start, as llama.cpp's Hermes grammar triggers on `{"name": ...` there."""

from __future__ import annotations

import json
import re
from typing import Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat, one_of_schemas
from kinetic.tools.request import Tool

OPEN, CLOSE = "<tool_call>", "</tool_call>"
DECODER = json.JSONDecoder()
CALL = re.compile(rf"\s*{re.escape(OPEN)}\s*(.*?)\s*{re.escape(CLOSE)}\s*", re.DOTALL)


def matches(source: str) -> bool:
    return OPEN in source


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After the first <tool_call>: the call's JSON object and </tool_call>; with parallel, more calls.
    Bare: the JSON objects alone, one per line."""
    more = lambda rule: f" (WS {rule})*" if parallel else ""  # noqa: E731
    return "\n".join([
        f"calls: hermes_call{more(markup.literal(OPEN) + ' hermes_call')}",
        f"hermes_call: WS hermes_object WS {markup.literal(CLOSE)}",
        f"bare_calls: hermes_object{more('hermes_object')}",
        f"hermes_object: {lark_json(one_of_schemas(tools))}",
    ])


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    calls, end = [], 0
    while (found := next_call(text, end)) is not None:
        call, end = found
        calls.append(call)
    return calls, end


def next_call(text: str, at: int) -> tuple[ToolCall, int] | None:
    """The call at text[at:] (in its tags, or bare), and where it ends."""
    tagged = CALL.match(text, at)
    start = at + len(text[at:]) - len(text[at:].lstrip())
    try:
        if tagged is not None:
            call, end = json.loads(tagged.group(1)), tagged.end()
        elif text.startswith("{", start):
            call, end = DECODER.raw_decode(text, start)
            end += len(text[end:]) - len(text[end:].lstrip())
        else:
            return None
    except ValueError:
        return None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return None
    return ToolCall.of(call["name"], call.get("arguments", {})), end


HERMES = ToolFormat(name="Hermes 2 Pro", trigger=OPEN, matches=matches, calls_rule=calls_rule,
                    read_calls=read_calls, markers=(OPEN, CLOSE), bare_start="{")
