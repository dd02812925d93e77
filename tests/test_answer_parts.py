"""An answer's parts (thinking, text, each call) as the Anthropic and Responses routes show them: opened, added
to and closed in order, the same whatever the pieces the answer streams in, and the same parts as the chat
route's message."""

from __future__ import annotations

import pytest

from kinetic.server.answer_parts import ADD, CLOSE, OPEN, AnswerParts, whole_answer
from kinetic.server.chat_answer import chat_message
from test_tool_split import CALL_F, CALL_G, job


def streamed(thinking, text: str, step: int) -> tuple[list[tuple[str, str]], list]:
    """(kind, text) of each part, from the steps of text fed step characters at a time; and the steps."""
    parts = AnswerParts(job(thinking))
    steps = [s for i in range(0, len(text), step) for s in parts.feed(text[i:i + step])] + parts.finish()
    return [(part.kind, part.text) for part in parts.parts], steps


@pytest.mark.parametrize("step", [1, 3, 1000])
@pytest.mark.parametrize("thinking, text, expected", [
    (True, f"Wants f.</think>\n\n{CALL_F}", [("thinking", "Wants f."), ("call", '{"a": 1}')]),
    (None, f"Let me look. {CALL_F}\n{CALL_G}", [("text", "Let me look. "), ("call", '{"a": 1}'),
                                                 ("call", "{}")]),
    (None, f"  \n{CALL_F}", [("call", '{"a": 1}')]),  # white space before calls makes no text part
    (None, "  \n", [("text", "  \n")]),  # nor is it lost when no call comes
    (True, "Hmm.</think>\n\nHello there", [("thinking", "Hmm."), ("text", "Hello there")]),
    (None, "", []),
], ids=["thinking-then-call", "text-then-two-calls", "blank-before-call", "only-blank", "thinking-then-text",
        "empty"])
def test_parts_in_order_whatever_the_pieces(thinking, text, expected, step):
    parts, steps = streamed(thinking, text, step)
    assert parts == expected
    opened = [s.part.index for s in steps if s.what == OPEN]
    closed = [s.part.index for s in steps if s.what == CLOSE]
    assert opened == closed == list(range(len(expected)))  # each opened once, closed before the next opens
    for index, (_, whole) in enumerate(expected):
        assert "".join(s.text for s in steps if s.what == ADD and s.part.index == index) == whole
    answer = whole_answer(job(thinking), text)
    message, _ = chat_message(job(thinking), text)
    assert [(p.kind, p.text) for p in answer.parts] == parts
    assert [c.name for c in answer.calls] == [c["function"]["name"] for c in message.get("tool_calls", [])]
    assert "".join(p.text for p in answer.parts if p.kind == "text") == (message["content"] or "")
