"""The contract every tool-call format keeps: kinetic/tools/formats/ holds one module per format."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Mapping, Optional, Sequence

from kinetic.tools.calls import ToolCall
from kinetic.tools.request import Tool


class Markup:
    """How a format's grammar writes its markers: a marker the vocabulary holds as one special token is that
    token (<|tool_call_start|>), any other text a quoted string. Built by the caller from the tokenizer.
    token_ids: the ids of special tokens that llguidance cannot name by their text, which it reads as a token
    only in the shape <...> (Mistral's [TOOL_CALLS] is written <[id]>)."""

    def __init__(self, special_tokens: frozenset[str] = frozenset(), token_ids: Optional[Mapping[str, int]] = None):
        self.special_tokens = special_tokens
        self.token_ids = dict(token_ids or {})

    def literal(self, text: str) -> str:
        """A Lark (llguidance) terminal matching text."""
        if text not in self.special_tokens:
            return json.dumps(text)
        return f"<[{self.token_ids[text]}]>" if text in self.token_ids else text


@dataclass(frozen=True)
class ToolFormat:
    """How one family of chat templates writes tool calls.

    name: what /props reports as chat_format.
    trigger: the text that opens the calls anywhere in the answer ("" for formats with bare calls only); with
        `auto`, the grammar holds the answer only from there on.
    bare_start: "" or the text calls written without any marker begin with ("{" for bare JSON calls), which
        opens calls only at the answer's start (after white space); calls_rule then also defines the rule
        `bare_calls`, matching such calls whole.
    markers: the format's marker texts, which come out as text even where they are special tokens.
    matches(template source): whether a chat template writes calls this way (formats are tried in order).
    calls_rule(tools, parallel, markup): Lark rules whose rule `calls` matches the text that follows the
        trigger: exactly one call, or with parallel one or more, each naming one of tools with arguments
        that validate against its parameters. Rule and terminal names start with the format's own prefix
        (hermes_...), but for `calls` and the composer's own WS (up to four white space characters) and TEXT
        (any text); kinetic.tools.grammar puts the trigger before `calls`.
    read_calls(text, tools): text starts at the trigger (or, for bare calls, at the answer's first non-space
        character); the complete calls at its start, and how many characters of text they span (markers,
        separators and the white space around them included). A text that holds no complete call yet gives
        ([], 0). tools: the request's functions, whose parameters say how to read a value the format writes
        as bare text (Qwen3.5's XML parameters).
    """

    name: str
    trigger: str
    matches: Callable[[str], bool]
    calls_rule: Callable[[Sequence[Tool], bool, Markup], str]
    read_calls: Callable[[str, Sequence[Tool]], tuple[list[ToolCall], int]]
    markers: tuple[str, ...] = ()
    bare_start: str = ""


def one_of_schemas(tools: Sequence[Tool], name_key: str = "name", arguments_key: str = "arguments") -> dict:
    """A JSON Schema for one call written as a JSON object {name_key: ..., arguments_key: {...}}."""
    options = [{"type": "object", "properties": {name_key: {"const": tool.name}, arguments_key: tool.parameters},
                "required": [name_key, arguments_key], "additionalProperties": False} for tool in tools]
    return options[0] if len(options) == 1 else {"anyOf": options}

