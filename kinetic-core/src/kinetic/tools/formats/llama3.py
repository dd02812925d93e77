"""Llama 3.1, 3.2 and 3.3: the answer is one bare JSON object {"name": ..., "parameters": {...}} (Meta's
JSON-based tool calling, as the templates ask for it), or with 3.1 and 3.3's built-in tools
<|python_tag|>name.call(key="value")."""

from __future__ import annotations

import json
import re
from typing import Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats.json_call import json_call
from kinetic.tools.formats.pythonic import read_call, read_expression
from kinetic.tools.formats.rules import quoted
from kinetic.tools.request import Tool

PYTHON_TAG = "<|python_tag|>"
# llama.cpp's test for the family (its Llama 3.x format before the autoparser); Functionary v3.1, a Llama 3.1
# template that writes <function=...> calls, is another format.
TOOL_HEADER = "<|start_header_id|>ipython<|end_header_id|>"
SPACE = re.compile(r"\s*")


def matches(source: str) -> bool:
    return TOOL_HEADER in source and "<function=" not in source


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """The object: "name" and "parameters" of one of tools; one call even with parallel, as the templates
    render no more than one ("This model only supports single tool-calls at once!"). After <|python_tag|>,
    a built-in tool's call, free text (read as name.call(...))."""
    lines = ["bare_calls: \"{\" WS \"\\\"name\\\"\" WS \":\" WS llama3_call WS \"}\"",
             "calls: LLAMA3_BUILT_IN",
             "LLAMA3_BUILT_IN: /[^\\n]+/",
             "llama3_call: " + " | ".join(f"llama3_tool_{i}" for i in range(len(tools)))]
    for i, tool in enumerate(tools):
        lines.append(f"llama3_tool_{i}: {quoted(json.dumps(tool.name))} WS \",\" WS "
                     f"\"\\\"parameters\\\"\" WS \":\" WS {lark_json(tool.parameters)}")
    return "\n".join(lines)


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    """One call: the JSON object, or <|python_tag|> and a built-in tool's name.call(...), which runs to the
    end of the answer."""
    start = SPACE.match(text).end()
    if text.startswith(PYTHON_TAG, start):
        call = read_call(read_expression(text[start + len(PYTHON_TAG):]))
        if call is None or not call[0].endswith(".call"):
            return [], 0
        return [ToolCall.of(call[0][:-len(".call")], call[1])], len(text)
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return [], 0
    call = json_call(value, "parameters")
    return ([call], SPACE.match(text, end).end()) if call is not None else ([], 0)


LLAMA_3 = ToolFormat(name="Llama 3.x", trigger=PYTHON_TAG, matches=matches, calls_rule=calls_rule,
                     read_calls=read_calls, markers=(PYTHON_TAG,), bare_start="{")
