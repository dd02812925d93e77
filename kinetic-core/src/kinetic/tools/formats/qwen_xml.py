"""Qwen3-Coder, Qwen3.5, Nemotron 3 Nano and StepFun 3.5: XML calls,
<tool_call>\\n<function=NAME>\\n<parameter=P>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>, each value bare
text (llama.cpp's common/parsers/qwen3-coder.cpp reads them the same way)."""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats.rules import arguments_in_order, in_order, quoted
from kinetic.tools.request import Tool

OPEN, CLOSE = "<tool_call>", "</tool_call>"
VALUE_CLOSE = "</parameter>"
VALUE_END, FUNCTION_END = "\n</parameter>\n", "</function>\n"
# llama.cpp leaves templates that write no new line between the tags to another format.
SAME_LINE = "'<tool_call><function=' ~ tool_call.name ~ '>'"
FUNCTION = re.compile(rf"\s*{re.escape(OPEN)}\s*<function=([^>\n]+)>")
PARAMETER = re.compile(r"\s*<parameter=([^>\n]+)>\n?")
END = re.compile(rf"\s*</function>\s*{re.escape(CLOSE)}\s*")
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
              type(None): "null"}
ANY_TYPE = frozenset(JSON_TYPES.values())


def matches(source: str) -> bool:
    return all(tag in source for tag in (OPEN, "<function=", "<parameter=")) and SAME_LINE not in source


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After <tool_call>: one function of tools with its parameters in the schema's order (the required ones
    always), each value free text up to the closing tag, or JSON of its schema where it cannot be a string,
    as llama.cpp's grammar holds it."""
    more = f" (WS {markup.literal(OPEN)} qwen_xml_call)*" if parallel else ""
    lines = [f"calls: qwen_xml_call{more}",
             "qwen_xml_call: " + " | ".join(f"qwen_xml_tool_{i}" for i in range(len(tools))),
             f"qwen_xml_text[lazy]: TEXT {quoted(VALUE_END)}"]
    for i, tool in enumerate(tools):
        parameters = in_order([(parameter_rule(name, schema), required)
                               for name, schema, required in arguments_in_order(tool)])
        opening = quoted(f"\n<function={tool.name}>\n")
        lines.append(f"qwen_xml_tool_{i}: {opening} {parameters} {quoted(FUNCTION_END)} {markup.literal(CLOSE)}")
    return "\n".join(lines)


def parameter_rule(name: str, schema: dict) -> str:
    opening = quoted(f"<parameter={name}>\n")
    if "string" in value_types(schema):
        return f"{opening} qwen_xml_text"
    return f"{opening} {lark_json(schema)} {quoted(VALUE_END)}"


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    schemas = {tool.name: tool.parameters.get("properties") or {} for tool in tools}
    calls, end = [], 0
    while (read := read_call(text, end, schemas)) is not None:
        calls.append(read[0])
        end = read[1]
    return calls, end


def read_call(text: str, start: int, schemas: dict[str, dict]) -> Optional[tuple[ToolCall, int]]:
    """The call that starts at text[start:] and where it ends, or None when there is no complete one."""
    opened = FUNCTION.match(text, start)
    if opened is None:
        return None
    name = opened.group(1)
    properties, arguments, at = schemas.get(name, {}), {}, opened.end()
    while (parameter := PARAMETER.match(text, at)) is not None:
        close = text.find(VALUE_CLOSE, parameter.end())
        if close < 0:
            return None
        value = text[parameter.end():close]
        value = value[:-1] if value.endswith("\n") else value
        arguments[parameter.group(1)] = typed(value, properties.get(parameter.group(1)))
        at = close + len(VALUE_CLOSE)
    closed = END.match(text, at)
    return (ToolCall.of(name, arguments), closed.end()) if closed is not None else None


def typed(value: str, schema: Any) -> Any:
    """A value's text as JSON where its schema allows a JSON value of that type, else the text itself: a
    parameter that may be a string stays one unless it reads as JSON of another type it allows."""
    allowed = value_types(schema)
    if allowed == {"string"}:
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    kind = JSON_TYPES.get(type(parsed))
    fits = kind in allowed or (kind == "integer" and "number" in allowed)
    return parsed if fits and kind != "string" else value


def value_types(schema: Any) -> frozenset[str]:
    """The JSON types a schema allows: its type, its enum's or const's values' types, its alternatives';
    any type where it says none."""
    if not isinstance(schema, dict):
        return ANY_TYPE
    if "type" in schema:
        kinds = schema["type"]
        return frozenset([kinds] if isinstance(kinds, str) else kinds)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return frozenset(JSON_TYPES.get(type(value), "string") for value in values)
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        return frozenset().union(*(value_types(alternative) for alternative in alternatives))
    return ANY_TYPE


QWEN_XML = ToolFormat(name="Qwen3 Coder", trigger=OPEN, matches=matches, calls_rule=calls_rule,
                      read_calls=read_calls, markers=(OPEN, CLOSE))
