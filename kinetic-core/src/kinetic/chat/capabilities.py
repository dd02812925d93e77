"""What a chat template can take, found by rendering it with small probe conversations, as llama.cpp
probes a template when it loads one, so that chat prompts adapt to the template where llama.cpp's do."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from kinetic.errors import ChatTemplateError

if TYPE_CHECKING:
    from kinetic.chat.template import ChatTemplate

MARKER = "KINETIC_PROBE_MARKER"
USER = {"role": "user", "content": "User message"}
TOOL, CALLED, ARGUMENT = "kinetic_probe_tool", "kinetic_probe_called", "KINETIC_PROBE_ARGUMENT"
PROBE_TOOL = {"type": "function", "function": {"name": TOOL, "description": "Tool description", "parameters": {
    "type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}},
    "required": ["arg"]}}}


@dataclass(frozen=True)
class Capabilities:
    """system_role: a system message's text reaches the prompt (else it is folded into the next message);
    string_content, typed_content: message content as a string, as a list of {"type": "text"} parts;
    thinking: the template reasons (llama-server then sets enable_thinking);
    tools: it renders the tools it is given; tool_calls: it renders an assistant's tool_calls;
    object_arguments: it reads a call's arguments as an object (else as the JSON text OpenAI sends)."""

    system_role: bool
    string_content: bool
    typed_content: bool
    thinking: bool
    tools: bool = False
    tool_calls: bool = False
    object_arguments: bool = False


class ReadAsParts(list):
    """A content made of parts that notes whether the template reads it as a list (iterates or indexes it)."""

    read = False

    def __iter__(self):
        self.read = True
        return super().__iter__()

    def __getitem__(self, index):
        self.read = True
        return super().__getitem__(index)


def probe_capabilities(template: ChatTemplate) -> Capabilities:
    """Called once per template (ChatTemplate.capabilities), on the first chat prompt."""
    parts = ReadAsParts([{"type": "text", "text": MARKER}])
    typed = render_probe(template, [{"role": "user", "content": parts}]) is not None and parts.read
    return Capabilities(
        system_role=MARKER in (render_probe(template, [{"role": "system", "content": MARKER}, USER]) or ""),
        string_content=MARKER in (render_probe(template, [{"role": "user", "content": MARKER}]) or ""),
        typed_content=typed,
        thinking=thinks(template),
        **tool_use(template),
    )


def tool_use(template: ChatTemplate) -> dict[str, bool]:
    """Whether the template renders tools and calls, probed as llama.cpp probes it: a conversation with a
    call and its result, the call's arguments as an object, then as JSON text."""
    rendered = {"object": render_probe(template, tool_conversation({"arg": ARGUMENT}), tools=[PROBE_TOOL]),
                "text": render_probe(template, tool_conversation(json.dumps({"arg": ARGUMENT})), tools=[PROBE_TOOL])}
    calls = {kind: text is not None and CALLED in text for kind, text in rendered.items()}
    return {"tools": any(text is not None and TOOL in text for text in rendered.values()),
            "tool_calls": calls["object"] or calls["text"],
            "object_arguments": calls["object"] and reads_object(rendered["object"] or "")}


def reads_object(rendered: str) -> bool:
    """The argument's value is there, and not as Python writes a dict (a template that prints the text)."""
    return ARGUMENT in rendered and f"{{'arg': '{ARGUMENT}'}}" not in rendered


def tool_conversation(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "call00001", "type": "function", "function": {"name": CALLED, "arguments": arguments}}
    return [USER, {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
            {"role": "assistant", "content": "The tool response was 'tool response'"}, USER]


def thinks(template: ChatTemplate) -> bool:
    """Whether the template reasons, as llama.cpp finds it: with enable_thinking one way, the prompt's end
    goes on past the other's (a reasoning block opened or closed), or an answer's reasoning is shown."""
    on = render_probe(template, [USER], enable_thinking=True)
    off = render_probe(template, [USER], enable_thinking=False)
    if on is not None and off is not None and (goes_on_past(on, off) or goes_on_past(off, on)):
        return True
    answered = [USER, {"role": "assistant", "content": "Answer", "reasoning_content": MARKER}]
    return MARKER in (render_probe(template, answered, enable_thinking=True, add_generation_prompt=False) or "")


def goes_on_past(longer: str, shorter: str, anchor: int = 32) -> bool:
    """Whether longer holds the last `anchor` characters of shorter with more than white space after them."""
    end = shorter[-anchor:]
    found = longer.rfind(end)
    return found >= 0 and bool(longer[found + len(end):].strip())


def render_probe(template: ChatTemplate, messages: list[dict[str, Any]], **variables: Any) -> Optional[str]:
    """What template renders for messages, with no special tokens and (unless variables say) an empty tool
    list; None if it fails."""
    try:
        return template.render_variables({"bos_token": "", "eos_token": "", "tools": [], "messages": messages,
                                           "add_generation_prompt": True, **variables})
    except ChatTemplateError:
        return None
