"""gpt-oss's answers, in OpenAI's harmony format (docs/experts.md, gpt-oss): a run of messages, each a header, then
<|message|>, its text and <|end|>; the prompt's <|start|>assistant opens the first, and each later one opens
with <|start|>assistant again. The header names the channel (analysis: the reasoning; final: the answer;
commentary: a preamble the user sees) and, for a call, its recipient (" to=functions.NAME"). The answer ends
with <|return|> or <|call|>, end-of-generation tokens that never reach the text.

HarmonySplit turns that text, as it streams, into reasoning and content. A call's message goes out as content
from its " to=" on, header and arguments, where the harmony tool format (kinetic.tools.formats.harmony) reads it.
"""

from __future__ import annotations

from typing import Optional

from kinetic.text import partial_end

START, CHANNEL, MESSAGE, END, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>"
MARKERS = (START, CHANNEL, MESSAGE, END, CONSTRAIN)  # o200k_harmony's, which its answers show as text
RECIPIENT = " to="
LONGEST_HEADER = 256  # characters of header without <|message|>: the model is not writing harmony; it is content


def writes_harmony(template_source: str) -> bool:
    """Whether a chat template's answers are gpt-oss's harmony (LLM-jp's dialect of it spaces its markers)."""
    return CHANNEL in template_source and "chat_format=llm-jp-harmony-v1" not in template_source


class HarmonySplit:
    """feed(text) -> (reasoning, content), in order; finish() releases what a partial marker held back."""

    def __init__(self) -> None:
        self._pending = ""
        self._header: Optional[str] = ""  # the current message's header so far; None inside its text
        self._into_reasoning = False  # where the current message's text goes
        self._dropped = False  # the current message is to a recipient that is no function: not shown

    def feed(self, text: str) -> tuple[str, str]:
        self._pending += text
        reasoning, content = [], []
        while self._pending:
            if self._header is not None:
                if not self._read_header(content):
                    break
                continue
            at = self._pending.find(END)
            upto = at if at >= 0 else len(self._pending) - partial_end(self._pending, END)
            body, self._pending = self._pending[:upto], self._pending[upto:]
            if not self._dropped:
                (reasoning if self._into_reasoning else content).append(body)
            if at < 0:
                break
            self._pending, self._header = self._pending[len(END):], ""
        return "".join(reasoning), "".join(content)

    def finish(self) -> tuple[str, str]:
        rest, self._pending = self._pending, ""
        if self._header is not None:
            return "", self._header + rest  # a header never finished: what the model wrote, as content
        if self._dropped:
            return "", ""
        return (rest, "") if self._into_reasoning else ("", rest)

    def _read_header(self, content: list[str]) -> bool:
        """Move the header's text out of pending; True once <|message|> ended it (the message's text follows)."""
        at = self._pending.find(MESSAGE)
        if at < 0:
            if len(self._header) + len(self._pending) > LONGEST_HEADER:  # not harmony: content from here on
                self._header, self._pending = None, self._header + self._pending
                self._into_reasoning = self._dropped = False
            return False
        header = self._header + self._pending[:at]
        self._pending, self._header = self._pending[at + len(MESSAGE):], None
        self._open(header, content)
        return True

    def _open(self, header: str, content: list[str]) -> None:
        """Where the message with this header goes: a call's header goes out as content (with <|message|>)."""
        header = header.removeprefix(START).removeprefix("assistant")
        at = header.find(RECIPIENT)
        recipient = _first_word(header[at + len(RECIPIENT):].split(CHANNEL)[0]) if at >= 0 else "assistant"
        channel = _first_word(header.split(CHANNEL)[-1]) if CHANNEL in header else "final"
        called = recipient.startswith("functions.")
        self._into_reasoning = recipient == "assistant" and channel == "analysis"
        self._dropped = recipient != "assistant" and not called  # a built-in tool's (browser, python)
        if called:
            content.append(header[at:] + MESSAGE)


def _first_word(text: str) -> str:
    return (text.split() or [""])[0]
