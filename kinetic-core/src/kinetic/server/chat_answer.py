"""A chat answer's text split into reasoning, content and tool calls, as it streams or whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from kinetic.chat.harmony import HarmonySplit
from kinetic.server.reasoning import ReasoningSplit
from kinetic.server.served import Job
from kinetic.tools import ToolCall
from kinetic.tools.split import CallSplit


@dataclass
class Delta:
    reasoning: str = ""
    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)

    def __add__(self, other: Delta) -> Delta:
        return Delta(self.reasoning + other.reasoning, self.content + other.content, self.calls + other.calls)


class ChatAnswer:
    """feed(text) -> Delta, in order; finish() -> what the end of the answer releases. Reasoning is split off
    first (where the job thinks, or its answer is harmony), then calls out of the rest (where tools were
    offered)."""

    def __init__(self, job: Job):
        self._reasoning = HarmonySplit() if job.harmony else \
            ReasoningSplit(job.thinking) if job.thinking is not None else None
        self._calls = CallSplit(job.tool_format, job.tool_functions) if job.tool_format is not None else None
        self.thinks = self._reasoning is not None

    def feed(self, text: str) -> Delta:
        reasoning, content = self._reasoning.feed(text) if self._reasoning else ("", text)
        return self._split_calls(reasoning, content)

    def finish(self) -> Delta:
        reasoning, content = self._reasoning.finish() if self._reasoning else ("", "")
        delta = self._split_calls(reasoning, content)
        if self._calls is None:
            return delta
        rest, calls = self._calls.finish()
        return delta + Delta(content=rest, calls=calls)

    def _split_calls(self, reasoning: str, content: str) -> Delta:
        if self._calls is None or not content:
            return Delta(reasoning, content)
        content, calls = self._calls.feed(content)
        return Delta(reasoning, content, calls)


def chat_message(job: Job, text: str) -> tuple[dict[str, Any], bool]:
    """The whole answer's message, and whether it holds tool calls; with calls, a content of only white
    space is null, as OpenAI sends it."""
    answer = ChatAnswer(job)
    whole = answer.feed(text) + answer.finish()
    content: Optional[str] = whole.content
    if whole.calls and not whole.content.strip():
        content = None
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if answer.thinks:
        message["reasoning_content"] = whole.reasoning
    if whole.calls:
        message["tool_calls"] = [call.report() for call in whole.calls]
    return message, bool(whole.calls)


def finish_reason(reason: Optional[str], called: bool) -> Optional[str]:
    """tool_calls where an answer that ended by itself holds calls."""
    return "tool_calls" if called and reason == "stop" else reason


class ChatStream:
    """A chat answer as stream deltas: reasoning and content as they come, each call once whole (its index,
    id, type and name first, then its arguments)."""

    def __init__(self, job: Job):
        self._answer = ChatAnswer(job)
        self.calls = 0

    def feed(self, text: str) -> list[dict[str, Any]]:
        """At least one delta (an empty one carries a held-back token's logprobs)."""
        return self._bodies(self._answer.feed(text), always=True)

    def finish(self) -> list[dict[str, Any]]:
        return self._bodies(self._answer.finish())

    def _bodies(self, delta: Delta, always: bool = False) -> list[dict[str, Any]]:
        text = {**({"reasoning_content": delta.reasoning} if delta.reasoning else {}),
                **({"content": delta.content} if delta.content else {})}
        bodies = [text] if text or always else []
        for call in delta.calls:
            bodies += [{"tool_calls": [part]} for part in call.stream_deltas(self.calls)]
            self.calls += 1
        return bodies
