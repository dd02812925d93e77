"""gpt-oss (OpenAI's harmony format; llama.cpp's common/parsers/gpt-oss.cpp): a call is a message to a function,
its recipient in the header and its arguments the message's JSON text, either way round:

    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}<|call|>
    <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{...}<|call|>

<|call|> ends the answer, so an answer holds one call. kinetic.chat.harmony passes a call's message on from
" to=" (the trigger here), header and arguments."""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from kinetic.constraints import Grammar
from kinetic.constraints.grammar import lark_json
from kinetic.chat.harmony import CHANNEL, CONSTRAIN, END, MARKERS, MESSAGE, START, writes_harmony
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats.rules import quoted
from kinetic.tools.request import Tool

TRIGGER = " to=functions."
HEADER = re.compile(rf" to=functions\.([^\s<]+)\s*(?:{re.escape(CHANNEL)}(?:commentary|analysis))?\s*"
                    rf"(?:{re.escape(CONSTRAIN)})?\w*{re.escape(MESSAGE)}")
DECODER = json.JSONDecoder()


def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
    """After " to=functions.": a function's name, the rest of the header, <|message|> and its arguments."""
    header = f'(" "? {markup.literal(CHANNEL)} ("commentary" | "analysis"))? " "? {markup.literal(CONSTRAIN)}? "json"?'
    lines = ["calls: " + " | ".join(f"harmony_tool_{i}" for i in range(len(tools))),
             f"harmony_header: {header} {markup.literal(MESSAGE)}"]
    lines += [f"harmony_tool_{i}: {quoted(tool.name)} harmony_header {lark_json(tool.parameters)}"
              for i, tool in enumerate(tools)]
    return "\n".join(lines)


def json_answer(schema: Any, markup: Markup) -> Grammar:
    """A harmony answer whose final message is JSON that validates against schema (response_format, json_schema),
    as llama.cpp's gpt-oss grammar holds it: the reasoning may come first, in its own analysis message."""
    lark = "\n".join([
        "%llguidance {}",
        "start: (harmony_analysis harmony_next)? harmony_final",
        f"harmony_analysis: {markup.literal(CHANNEL)} \"analysis\" {markup.literal(MESSAGE)} HARMONY_TEXT "
        f"{markup.literal(END)}",
        f"harmony_next: {markup.literal(START)} \"assistant\"",
        f"harmony_final: {markup.literal(CHANNEL)} \"final\" (\" \" {markup.literal(CONSTRAIN)}? \"json\")? "
        f"{markup.literal(MESSAGE)} {lark_json(schema)}",
        "HARMONY_TEXT: /(.|\\n)*/",
    ])
    return Grammar.from_lark(lark, "JSON answer grammar")


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    header = HEADER.match(text)
    if header is None:
        return [], 0
    try:
        arguments, end = DECODER.raw_decode(text, header.end())
    except ValueError:
        return [], 0
    if not isinstance(arguments, dict):
        return [], 0
    return [ToolCall.of(header.group(1), arguments)], end + len(text[end:]) - len(text[end:].lstrip())


HARMONY = ToolFormat(name="GPT-OSS", trigger=TRIGGER, matches=writes_harmony, calls_rule=calls_rule,
                     read_calls=read_calls, markers=MARKERS)
