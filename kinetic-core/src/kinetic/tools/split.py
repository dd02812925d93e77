"""An answer's text split as it streams into content and tool calls: text before the format's trigger is
content; from the trigger on, each call goes out once it is whole, and no marker text reaches the content.
What never reads as a call comes back as content."""

from __future__ import annotations

from typing import Sequence

from kinetic.text import partial_end
from kinetic.tools.calls import ToolCall
from kinetic.tools.format import ToolFormat
from kinetic.tools.request import Tool


class CallSplit:
    """feed(text) -> (content, calls now whole), in order; finish() says what the end of the answer settles."""

    def __init__(self, fmt: ToolFormat, tools: Sequence[Tool]):
        self.fmt = fmt
        self.tools = tools  # the request's functions, which say how to read some formats' values
        self._pending = ""  # text held back: it may start the trigger
        self._section: str | None = None  # the text from the trigger on, once it came
        self._sent = 0  # calls already given out
        self._past_start = False  # the answer's start was not bare calls

    def feed(self, text: str) -> tuple[str, list[ToolCall]]:
        if self._section is not None:
            self._section += text
            return "", self._new_calls()
        self._pending += text
        content = self._find_trigger()
        return content, (self._new_calls() if self._section is not None else [])

    def finish(self) -> tuple[str, list[ToolCall]]:
        if self._section is None:
            rest, self._pending = self._pending, ""
            return rest, []
        calls, used = self.fmt.read_calls(self._section, self.tools)
        if not calls:
            return self._section, []  # not a call after all: the model's text, as it wrote it
        rest = self._section[used:]
        return (rest if rest.strip() else ""), calls[self._sent:]

    def _find_trigger(self) -> str:
        """The content certainly before the calls; moves the calls' text into the section."""
        pending, bare = self._pending, self.fmt.bare_start
        if bare and not self._past_start:
            start = pending.lstrip()
            if start.startswith(bare):
                self._section, self._pending = start, ""
                return ""
            if not start or bare.startswith(start):
                return ""  # white space, or what may still start bare calls
            self._past_start = True
        trigger = self.fmt.trigger
        at = pending.find(trigger) if trigger else -1
        if at >= 0:
            self._section, self._pending = pending[at:], ""
            return pending[:at]
        held = partial_end(pending, trigger) if trigger else 0
        self._pending = pending[len(pending) - held:]
        return pending[: len(pending) - held]

    def _new_calls(self) -> list[ToolCall]:
        calls, _ = self.fmt.read_calls(self._section or "", self.tools)
        new = calls[self._sent:]
        self._sent = len(calls)
        return new

