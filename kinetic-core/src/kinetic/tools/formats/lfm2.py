"""LFM2 and LFM2.5: a Python list of calls between <|tool_call_start|> and <|tool_call_end|>,
<|tool_call_start|>[get_weather(city="Paris"), f(a=1)]<|tool_call_end|> (llama.cpp's common/parsers/lfm2.cpp)."""

from __future__ import annotations

import ast
import re
from typing import Sequence

from kinetic.chat.dialects import is_lfm2
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats.pythonic import read_call, read_expression
from kinetic.tools.formats.rules import arguments_in_order, in_order, quoted
from kinetic.tools.request import Tool

OPEN, CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
CALLS = re.compile(rf"\s*{re.escape(OPEN)}(.*?){re.escape(CLOSE)}\s*", re.DOTALL)
# A value's Python literal by its schema's type; any literal where the type is not one of these.
VALUES = {"string": "LFM2_STRING", "integer": "LFM2_INTEGER", "number": "LFM2_NUMBER",
          "boolean": "lfm2_boolean", "null": "\"None\"", "array": "lfm2_list", "object": "lfm2_dict"}
LITERALS = r"""
lfm2_value: LFM2_STRING | LFM2_NUMBER | lfm2_boolean | "None" | lfm2_list | lfm2_dict
lfm2_boolean: "True" | "False"
lfm2_list: "[" (lfm2_value (LFM2_COMMA lfm2_value)*)? "]"
lfm2_dict: "{" (lfm2_item (LFM2_COMMA lfm2_item)*)? "}"
lfm2_item: LFM2_STRING ":" LFM2_SPACE lfm2_value
LFM2_STRING: /"([^"\\\n]|\\.)*"|'([^'\\\n]|\\.)*'/
LFM2_INTEGER: /-?(0|[1-9][0-9]*)/
LFM2_NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/
LFM2_COMMA: /, ?/
LFM2_SPACE: / ?/
"""


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After <|tool_call_start|>: a list of one call (or with parallel, more) of tools, keyword arguments in
    the schema's order (the required ones always), each value a Python literal of its type."""
    more = " (LFM2_COMMA lfm2_call)*" if parallel else ""
    lines = [f"calls: \"[\" lfm2_call{more} \"]\" {markup.literal(CLOSE)}",
             "lfm2_call: " + " | ".join(f"lfm2_tool_{i}" for i in range(len(tools)))]
    for i, tool in enumerate(tools):
        arguments = in_order([(f"{quoted(name + '=')} {value_rule(schema)}", required)
                              for name, schema, required in arguments_in_order(tool)], "LFM2_COMMA")
        lines.append(f"lfm2_tool_{i}: {quoted(tool.name + '(')} {arguments} \")\"")
    return "\n".join(lines) + LITERALS


def value_rule(schema: dict) -> str:
    kind = schema.get("type")
    return VALUES.get(kind, "lfm2_value") if isinstance(kind, str) else "lfm2_value"


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    calls, end = [], 0
    while (found := CALLS.match(text, end)) is not None:
        listed = read_expression(found.group(1))
        if not isinstance(listed, ast.List):
            break
        read = [read_call(node) for node in listed.elts]
        if not read or None in read:
            break
        calls += [ToolCall.of(name, arguments) for name, arguments in read]
        end = found.end()
    return calls, end


LFM2 = ToolFormat(name="LFM2", trigger=OPEN, matches=is_lfm2, calls_rule=calls_rule, read_calls=read_calls,
                  markers=(OPEN, CLOSE))
