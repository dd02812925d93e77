"""The grammar that holds a reply with tools: `required` (and a named function) from the answer's start,
`auto` only once the format's trigger is written, as llama.cpp's lazy grammars do (llguidance's lazy
lexemes: docs/grammars.md)."""

from __future__ import annotations

import json
from typing import Optional

from kinetic.constraints import Grammar
from kinetic.constraints.matcher import NOT_TEXT
from kinetic.tokenizer import Tokenizer
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.request import ToolRequest

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
COMMON = r"""
TEXT: /(.|\n)*/
WS: /[ \t\r\n]{0,4}/
"""


def markup_for(tokenizer: Tokenizer, texts: tuple[str, ...]) -> Markup:
    """Which of texts the vocabulary holds as one token that is never text (a control token)."""
    special = set()
    for text in texts:
        ids = tokenizer.encode(text, add_special=False, parse_special=True)
        if len(ids) == 1 and tokenizer.vocab.attrs[ids[0]] & NOT_TEXT:
            special.add(text)
    return Markup(frozenset(special))


def tool_grammar(fmt: ToolFormat, request: ToolRequest, markup: Markup, thinking: Optional[bool],
                 answer_schema: Optional[dict] = None) -> Grammar:
    """request.choice required: calls only (after a whole reasoning block where the template reasons);
    auto: free text (or, with answer_schema, a JSON answer), or calls from the trigger on.
    thinking is reasoning.thinking_start's: None (no <think>), True (the answer starts inside one), False."""
    trigger = markup.literal(fmt.trigger)
    calls = fmt.calls_rule(request.calls, request.parallel, markup)
    if request.choice == "required":
        start = f"start: {reasoning(thinking)} WS {trigger} calls"
    elif answer_schema is not None:
        start = f"start: WS %json {json.dumps(answer_schema)} | WS {trigger} calls"
    elif fmt.at_start:
        first = json.dumps(fmt.trigger[0])[1:-1].replace("/", "\\/")
        start = f"start: ANSWER | WS {trigger} calls\nANSWER: /[ \\t\\r\\n]*([^ \\t\\r\\n{first}](.|\\n)*)?/"
    elif trigger in markup.special_tokens:
        start = f"start: TEXT | TEXT {trigger} calls"
    else:
        start = f"start: TEXT | before_trigger calls\nbefore_trigger[lazy]: TEXT {trigger}"
    lark = "\n".join(["%llguidance {}", start, think_rules(thinking), calls, COMMON])
    return Grammar.from_lark(lark, "tool call grammar")


def reasoning(thinking: Optional[bool]) -> str:
    return {None: "", True: "think_rest", False: "think_block?"}[thinking]


def think_rules(thinking: Optional[bool]) -> str:
    if thinking is None:
        return ""
    return "\n".join([f"think_rest[lazy]: TEXT {json.dumps(THINK_CLOSE)}",
                      f"think_block[lazy]: WS {json.dumps(THINK_OPEN)} TEXT {json.dumps(THINK_CLOSE)}"])
