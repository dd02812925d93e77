"""An answer's text into reasoning, content and tool calls, whole or streamed in pieces of any size."""

from __future__ import annotations

import pytest

from kinetic.server.chat_answer import ChatStream, chat_message
from kinetic.server.served import Job
from kinetic.tools import Tool
from kinetic.tools.formats.generic import GENERIC
from kinetic.tools.formats.hermes import HERMES
from kinetic.tools.split import CallSplit

TOOLS = (Tool("f", "", {"type": "object", "properties": {"a": {"type": "integer"}}}),)
CALL_F = '<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
CALL_G = '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'


def split(fmt, text: str, step: int) -> tuple[str, list[list[str]]]:
    """The content and the calls' names as each feed gave them."""
    splitter, content, given = CallSplit(fmt, TOOLS), "", []
    for piece in [text[i:i + step] for i in range(0, len(text), step)]:
        released, calls = splitter.feed(piece)
        content += released
        given += [[call.name for call in calls]] if calls else []
    released, calls = splitter.finish()
    return content + released, given + ([[call.name for call in calls]] if calls else [])


@pytest.mark.parametrize("step", [1, 2, 5, 1000])
@pytest.mark.parametrize("fmt, text, content, names", [
    (HERMES, f"Let me look. {CALL_F}\n{CALL_G}", "Let me look. ", ["f", "g"]),
    (HERMES, ' {"name": "f", "arguments": {"a": 1}}', "", ["f"]),
    (HERMES, "No call <tool_call", "No call <tool_call", []),
    (HERMES, "<tool_call>\n{not json}\n</tool_call>", "<tool_call>\n{not json}\n</tool_call>", []),
    (HERMES, "Plain {\"name\": \"f\"}", "Plain {\"name\": \"f\"}", []),
    (HERMES, f"{CALL_F} and then some words", "and then some words", ["f"]),
    (GENERIC, '{"tool_call": {"name": "f", "arguments": {"a": 2}}}', "", ["f"]),
    (GENERIC, '{"response": "hello"}', '{"response": "hello"}', []),
], ids=["text-then-two", "bare", "cut-marker", "not-json", "brace-later", "text-after", "generic", "generic-no-call"])
def test_calls_split_from_content_whatever_the_pieces(fmt, text, content, names, step):
    got_content, given = split(fmt, text, step)
    assert got_content == content
    assert [name for names_given in given for name in names_given] == names
    if step == 1 and len(names) > 1:  # streamed: each call goes out once whole, before the next is written
        assert given == [[name] for name in names]


def job(thinking) -> Job:
    return Job(prompt=[1], overrides={}, max_tokens=1, thinking=thinking, tool_format=HERMES, tool_functions=TOOLS)


def test_reasoning_first_then_the_calls_no_marker_in_content():
    text = f"The user wants f.</think>\n\n{CALL_F}"
    message, called = chat_message(job(True), text)
    assert called and message["content"] is None and message["reasoning_content"] == "The user wants f."
    assert [call["function"] for call in message["tool_calls"]] == [{"name": "f", "arguments": '{"a": 1}'}]
    stream = ChatStream(job(True))
    bodies = [body for char in text for body in stream.feed(char)] + stream.finish()
    kinds = [key for body in bodies for key in body]
    assert kinds.index("tool_calls") > max(i for i, kind in enumerate(kinds) if kind == "reasoning_content")
    assert "".join(body.get("content", "") for body in bodies).strip() == ""
    assert "".join(body.get("reasoning_content", "") for body in bodies) == "The user wants f."
    [head, arguments] = [body["tool_calls"][0] for body in bodies if "tool_calls" in body]
    assert head["index"] == 0 and head["type"] == "function" and head["function"] == {"name": "f", "arguments": ""}
    assert arguments == {"index": 0, "function": {"arguments": '{"a": 1}'}} and stream.calls == 1


def test_an_answer_that_is_no_call_is_content():
    message, called = chat_message(job(None), "<tool_call>\n{\"name\": 3}\n</tool_call>")
    assert not called and message == {"role": "assistant", "content": "<tool_call>\n{\"name\": 3}\n</tool_call>"}
