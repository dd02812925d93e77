"""Mistral's [TOOL_CALLS] formats, told apart by the template's own markers:
Mistral Nemo writes a JSON list, [TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "..."}];
Ministral 3, Magistral and Devstral one [TOOL_CALLS]NAME[ARGS]{...} a call;
Mistral Small 3.2 [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...} (llama.cpp's test-chat.cpp cases for each)."""

from __future__ import annotations

import json
import re
from typing import Callable, Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat, one_of_schemas
from kinetic.tools.formats.json_call import json_call
from kinetic.tools.formats.rules import quoted
from kinetic.tools.request import Tool

CALLS, ARGS, CALL_ID = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
# The templates refuse any call id but nine letters and digits.
ID_PATTERN = "[a-zA-Z0-9]{9}"
OPENING = re.compile(rf"\s*{re.escape(CALLS)}\s*")
NAMED = re.compile(rf"\s*{re.escape(CALLS)}\s*([^\[\]\s]+)(?:{re.escape(CALL_ID)}([^\[\]]*))?{re.escape(ARGS)}")
SPACE = re.compile(r"\s*")


def writes_list(source: str) -> bool:
    return CALLS in source and ARGS not in source


def writes_named(source: str) -> bool:
    """Ministral 3 and Devstral; llama.cpp tells Ministral 3 from Mistral Small 3.2 by [CALL_ID]."""
    return CALLS in source and ARGS in source and CALL_ID not in source


def writes_named_with_id(source: str) -> bool:
    return CALLS in source and ARGS in source and CALL_ID in source


def list_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After [TOOL_CALLS]: the JSON list of one call (or with parallel, more), each with its id."""
    calls = {"type": "array", "items": with_id(one_of_schemas(tools)), "minItems": 1}
    return f"calls: WS {lark_json(calls if parallel else {**calls, 'maxItems': 1})}"


def with_id(schema: dict) -> dict:
    """One call's schema (an object, or anyOf objects) with a required "id" as the templates want it."""
    if "anyOf" in schema:
        return {"anyOf": [with_id(option) for option in schema["anyOf"]]}
    return {**schema, "properties": {**schema["properties"], "id": {"type": "string", "pattern": f"^{ID_PATTERN}$"}},
            "required": [*schema["required"], "id"]}


def read_list(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    opening = OPENING.match(text)
    if opening is None:
        return [], 0
    try:
        value, end = json.JSONDecoder().raw_decode(text, opening.end())
    except ValueError:
        return [], 0
    calls = [json_call(entry) for entry in value] if isinstance(value, list) and value else [None]
    return ([], 0) if None in calls else (calls, SPACE.match(text, end).end())


def named_rule(with_call_id: bool) -> Callable[[Sequence[Tool], bool, Markup], str]:
    def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
        """After [TOOL_CALLS]: NAME, its call id where the template writes one, [ARGS] and the arguments'
        JSON; with parallel, more calls each after its own [TOOL_CALLS]."""
        more = f" (WS {markup.literal(CALLS)} mistral_call)*" if parallel else ""
        call_id = f" {markup.literal(CALL_ID)} MISTRAL_CALL_ID" if with_call_id else ""
        lines = [f"calls: mistral_call{more}",
                 "mistral_call: " + " | ".join(f"mistral_tool_{i}" for i in range(len(tools))),
                 f"MISTRAL_CALL_ID: /{ID_PATTERN}/"]
        lines += [f"mistral_tool_{i}: {quoted(tool.name)}{call_id} {markup.literal(ARGS)} {lark_json(tool.parameters)}"
                  for i, tool in enumerate(tools)]
        return "\n".join(lines)

    return calls_rule


def read_named(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    """Each call: [TOOL_CALLS]NAME[ARGS]{...}, or [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}."""
    calls, end = [], 0
    while (found := NAMED.match(text, end)) is not None:
        try:
            arguments, after = json.JSONDecoder().raw_decode(text, found.end())
        except ValueError:
            break
        if not isinstance(arguments, dict):
            break
        calls.append(ToolCall.of(found.group(1), arguments, found.group(2) or ""))
        end = SPACE.match(text, after).end()
    return calls, end


MISTRAL_NEMO = ToolFormat(name="Mistral Nemo", trigger=CALLS, matches=writes_list, calls_rule=list_rule,
                          read_calls=read_list, markers=(CALLS,))
MINISTRAL_3 = ToolFormat(name="Ministral 3", trigger=CALLS, matches=writes_named, calls_rule=named_rule(False),
                         read_calls=read_named, markers=(CALLS, ARGS))
MISTRAL_SMALL_3_2 = ToolFormat(name="Mistral Small 3.2", trigger=CALLS, matches=writes_named_with_id,
                               calls_rule=named_rule(True), read_calls=read_named, markers=(CALLS, ARGS, CALL_ID))
