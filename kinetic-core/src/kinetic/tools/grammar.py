"""The grammar that holds a reply with tools: `required` (and a named function) from the answer's start,
`auto` only once the format's trigger is written, as llama.cpp's lazy grammars do (llguidance's lazy
lexemes: docs/grammars.md)."""

from __future__ import annotations

import json
from typing import Optional

from kinetic.constraints.grammar import lark_json
from kinetic.constraints import Grammar
from kinetic.constraints.matcher import NOT_TEXT
from kinetic.tokenizer import Tokenizer
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.request import ToolRequest

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# Terminals of every tool grammar; the formats' calls rules use them too (format.ToolFormat.calls_rule).
COMMON = r"""
TEXT: /(.|\n)*/
WS: /[ \t\r\n]{0,4}/
"""


def markup_for(tokenizer: Tokenizer, fmt: ToolFormat) -> Markup:
    """The format's markers (its trigger included) that the vocabulary holds as one token that is never text
    (a control token), written as that token by its id."""
    special = {}
    for text in filter(None, (fmt.trigger, *fmt.markers)):
        ids = tokenizer.encode(text, add_special=False, parse_special=True)
        if len(ids) == 1 and tokenizer.vocab.attrs[ids[0]] & NOT_TEXT:
            special[text] = ids[0]
    return Markup(frozenset(special), special)


def tool_grammar(fmt: ToolFormat, request: ToolRequest, markup: Markup, thinking: Optional[bool],
                 answer_schema: Optional[dict] = None) -> Grammar:
    """request.choice required: calls only (after a whole reasoning block where the template reasons);
    auto: free text (or, with answer_schema, a JSON answer), or calls from the trigger on.
    thinking is reasoning.thinking_start's: None (no <think>), True (the answer starts inside one), False."""
    calls = fmt.calls_rule(request.calls, request.parallel, markup)
    if request.choice == "required":
        start = f"start: {reasoning(thinking)} WS {opened_calls(fmt, markup)}"
    elif answer_schema is not None:
        start = f"start: WS {lark_json(answer_schema)} | WS {opened_calls(fmt, markup)}"
    else:
        start = free_or_calls(fmt, markup)
    lark = "\n".join(["%llguidance {}", start, think_rules(thinking), calls, COMMON])
    return Grammar.from_lark(lark, "tool call grammar")


def opened_calls(fmt: ToolFormat, markup: Markup) -> str:
    """Calls from the answer's start on: after their trigger, or bare."""
    options = [f"{markup.literal(fmt.trigger)} calls"] if fmt.trigger else []
    return "(" + " | ".join(options + (["bare_calls"] if fmt.bare_start else [])) + ")"


def free_or_calls(fmt: ToolFormat, markup: Markup) -> str:
    """`auto`: any text, calls opened by the trigger (a lazy lexeme: the grammar holds the text only from
    the trigger's first appearance on), or bare calls where the answer starts with them."""
    text, options, rules = "TEXT", [], []
    if fmt.bare_start:
        first = json.dumps(fmt.bare_start[0])[1:-1].replace("/", "\\/")
        text = "ANSWER"  # text that does not start as bare calls do
        options.append("WS bare_calls")
        rules.append(f"ANSWER: /([ \\t\\r\\n]*[^ \\t\\r\\n{first}](.|\\n)*)?/")
    trigger = markup.literal(fmt.trigger) if fmt.trigger else ""
    if fmt.trigger in markup.special_tokens:
        options.append(f"{text} {trigger} calls")
    elif trigger:
        options.append("before_trigger calls")
        rules.append(f"before_trigger[lazy]: {text} {trigger}")
    return "\n".join(["start: " + " | ".join([text, *options]), *rules])


def reasoning(thinking: Optional[bool]) -> str:
    return {None: "", True: "think_rest", False: "think_block?"}[thinking]


def think_rules(thinking: Optional[bool]) -> str:
    if thinking is None:
        return ""
    return "\n".join([f"think_rest[lazy]: TEXT {json.dumps(THINK_CLOSE)}",
                      f"think_block[lazy]: WS {json.dumps(THINK_OPEN)} TEXT {json.dumps(THINK_CLOSE)}"])
