"""DeepSeek V3 and R1: calls between <｜tool▁calls▁begin｜> and <｜tool▁calls▁end｜>, each
<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\n{...}\\n```<｜tool▁call▁end｜>; V3.1 writes
<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜> (llama.cpp's models/templates/deepseek-ai-*)."""

from __future__ import annotations

import json
import re
from typing import Callable, Optional, Sequence

from kinetic.constraints.grammar import lark_json
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats.rules import quoted
from kinetic.tools.request import Tool

CALLS_BEGIN, CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CALL_BEGIN, CALL_END, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
FENCE = "```json"
CALL = re.compile(rf"\s*{re.escape(CALL_BEGIN)}(.*?){re.escape(SEP)}(.*?){re.escape(CALL_END)}", re.DOTALL)
FENCED = re.compile(r"\s*([^\n]+?)\s*```(?:json)?\s*(.*?)\s*```\s*", re.DOTALL)
OPENING = re.compile(rf"\s*{re.escape(CALLS_BEGIN)}")
CLOSING = re.compile(rf"\s*{re.escape(CALLS_END)}\s*")


def writes_fenced(source: str) -> bool:
    return CALLS_BEGIN in source and FENCE in source


def writes_bare(source: str) -> bool:
    return CALLS_BEGIN in source and FENCE not in source


def calls_rule_for(fenced: bool) -> Callable[[Sequence[Tool], bool, Markup], str]:
    def calls_rule(tools: Sequence[Tool], parallel: bool, markup: Markup) -> str:
        """After <｜tool▁calls▁begin｜>: one call of tools (or with parallel, more), then
        <｜tool▁calls▁end｜>."""
        more = " (WS deepseek_call)*" if parallel else ""
        kind = quoted("function") + " " if fenced else ""
        lines = [f"calls: deepseek_call{more} {markup.literal(CALLS_END)}",
                 f"deepseek_call: {markup.literal(CALL_BEGIN)} {kind}deepseek_tool {markup.literal(CALL_END)}",
                 "deepseek_tool: " + " | ".join(f"deepseek_tool_{i}" for i in range(len(tools)))]
        for i, tool in enumerate(tools):
            arguments = lark_json(tool.parameters)
            if fenced:
                opening, closing = quoted(f"{tool.name}\n{FENCE}\n"), quoted("\n```")
                lines.append(f"deepseek_tool_{i}: {markup.literal(SEP)} {opening} {arguments} {closing}")
            else:
                lines.append(f"deepseek_tool_{i}: {quoted(tool.name)} {markup.literal(SEP)} {arguments}")
        return "\n".join(lines)

    return calls_rule


def read_calls(text: str, tools: Sequence[Tool]) -> tuple[list[ToolCall], int]:
    """Either way of writing a call; each call complete at its <｜tool▁call▁end｜>."""
    opening = OPENING.match(text)
    if opening is None:
        return [], 0
    calls, end = [], opening.end()
    while (found := CALL.match(text, end)) is not None and (call := read_call(*found.groups())) is not None:
        calls.append(call)
        end = found.end()
    if not calls:
        return [], 0
    closing = CLOSING.match(text, end)
    return calls, closing.end() if closing is not None else end


def read_call(before_sep: str, after_sep: str) -> Optional[ToolCall]:
    """function<sep>NAME\\n```json\\n{...}\\n``` or NAME<sep>{...}."""
    fenced = FENCED.fullmatch(after_sep)
    name, arguments = (fenced.group(1), fenced.group(2)) if fenced else (before_sep.strip(), after_sep)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return None
    return ToolCall.of(name, parsed) if isinstance(parsed, dict) and name else None


MARKERS = (CALLS_BEGIN, CALLS_END, CALL_BEGIN, CALL_END, SEP)
DEEPSEEK_R1 = ToolFormat(name="DeepSeek R1", trigger=CALLS_BEGIN, matches=writes_fenced,
                         calls_rule=calls_rule_for(True), read_calls=read_calls, markers=MARKERS)
DEEPSEEK_V3_1 = ToolFormat(name="DeepSeek V3.1", trigger=CALLS_BEGIN, matches=writes_bare,
                           calls_rule=calls_rule_for(False), read_calls=read_calls, markers=MARKERS)
