"""A chat answer as the parts the Anthropic Messages and OpenAI Responses APIs show it in (content blocks,
output items): its thinking, its text and each tool call, in the order they come, each opened, added to and
closed. Both APIs read the same split as the chat route (chat_answer.ChatAnswer), streamed or whole."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Optional

from kinetic.server.chat_answer import ChatAnswer, Delta
from kinetic.server.served import Job
from kinetic.tools import ToolCall

THINKING, TEXT, CALL = "thinking", "text", "call"
OPEN, ADD, CLOSE = "open", "add", "close"


@dataclass
class Part:
    """kind: THINKING, TEXT or CALL; index: its place in the answer; text: the thinking or text so far, or
    the call's arguments; id: for the APIs that name parts."""

    kind: str
    index: int
    text: str = ""
    call: Optional[ToolCall] = None
    id: str = field(default_factory=lambda: secrets.token_hex(12))


@dataclass(frozen=True)
class Step:
    """what: OPEN, ADD (text is what it adds) or CLOSE."""

    what: str
    part: Part
    text: str = ""


class AnswerParts:
    """feed(text) -> steps, in order; finish() -> the last ones, every part closed; parts: the answer so far.
    Text that is only white space opens no part until more comes; an answer that calls drops it, as the
    chat route's message has no content then."""

    def __init__(self, job: Job):
        self._answer = ChatAnswer(job)
        self.parts: list[Part] = []
        self._open: Optional[Part] = None
        self._blank = ""

    @property
    def calls(self) -> list[ToolCall]:
        return [part.call for part in self.parts if part.call is not None]

    def feed(self, text: str) -> list[Step]:
        return self._steps(self._answer.feed(text))

    def finish(self) -> list[Step]:
        steps = self._steps(self._answer.finish())
        if self._blank and not self.calls:
            steps += self._add(TEXT, self._blank)
        return steps + self._close()

    def _steps(self, delta: Delta) -> list[Step]:
        steps = self._add(THINKING, delta.reasoning) if delta.reasoning else []
        if delta.content:
            steps += self._text(delta.content)
        for call in delta.calls:
            self._blank = ""
            steps += self._add(CALL, call.arguments, call) + self._close()
        return steps

    def _text(self, content: str) -> list[Step]:
        if self._open is None or self._open.kind != TEXT:
            content, self._blank = self._blank + content, ""
            if not content.strip():
                self._blank = content
                return []
        return self._add(TEXT, content)

    def _add(self, kind: str, text: str, call: Optional[ToolCall] = None) -> list[Step]:
        steps = []
        if call is not None or self._open is None or self._open.kind != kind:
            steps += self._close()
            self._open = Part(kind, len(self.parts), call=call)
            self.parts.append(self._open)
            steps.append(Step(OPEN, self._open))
        self._open.text += text
        return steps + [Step(ADD, self._open, text)]

    def _close(self) -> list[Step]:
        if self._open is None:
            return []
        part, self._open = self._open, None
        return [Step(CLOSE, part)]


def whole_answer(job: Job, text: str) -> AnswerParts:
    """The parts of a whole answer: what a request that does not stream gets."""
    parts = AnswerParts(job)
    parts.feed(text)
    parts.finish()
    return parts
