"""Thinking apart from the answer: text inside <think> ... </think> becomes reasoning_content.

A model thinks when its chat template knows the <think> tag and the request did not turn enable_thinking
off. Its answer starts inside the thinking when the prompt ends in an open <think> (the template opened
it), or enters it when the answer's first text is <think>. Tags may arrive split across pieces.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from kinetic.text import partial_end

OPEN, CLOSE = "<think>", "</think>"


def thinks(template_source: str) -> bool:
    """Whether a model with this chat template thinks (its answers' reasoning is split off)."""
    return OPEN in template_source


def thinking_start(template_source: str, prompt_text: str, template_kwargs: Mapping[str, Any]) -> Optional[bool]:
    """None: no splitting; True: the answer starts inside the thinking; False: it may open with <think>."""
    if not thinks(template_source) or template_kwargs.get("enable_thinking") is False:
        return None
    return prompt_text.rfind(OPEN) > prompt_text.rfind(CLOSE)


class ReasoningSplit:
    """feed(text) -> (reasoning, content), in order; finish() releases what a partial tag held back."""

    def __init__(self, thinking: bool):
        self.thinking = thinking
        self._pending = ""
        self._answer_started = False  # only a leading <think> opens the thinking
        self._after_close = False  # the answer's leading newlines after </think> are dropped

    def feed(self, text: str) -> tuple[str, str]:
        self._pending += text
        reasoning, content = [], []
        while self._pending:
            tag = CLOSE if self.thinking else OPEN
            if not self.thinking and self._answer_started:
                content.append(self._take(len(self._pending)))
                break
            at = self._pending.find(tag)
            if at < 0 and not self.thinking and not self._pending.strip():
                break  # only whitespace yet: it may still come before a <think>
            if at < 0:
                held = partial_end(self._pending, tag)
                if not self.thinking and self._pending[: len(self._pending) - held].strip():
                    self._answer_started = True
                (reasoning if self.thinking else content).append(self._take(len(self._pending) - held))
                break
            before = self._take(at)
            if not self.thinking and before.strip():
                self._answer_started = True
                content.append(before + self._take(len(tag)))
                continue
            (reasoning if self.thinking else content).append(before if self.thinking else "")
            self._take(len(tag))
            self._after_close = self.thinking
            self.thinking = not self.thinking
        return "".join(reasoning), self._strip_leading("".join(content))

    def finish(self) -> tuple[str, str]:
        rest, self._pending = self._pending, ""
        return (rest, "") if self.thinking else ("", self._strip_leading(rest))

    def _take(self, n: int) -> str:
        taken, self._pending = self._pending[:n], self._pending[n:]
        return taken

    def _strip_leading(self, content: str) -> str:
        if self._after_close and content:
            content = content.lstrip("\n")
            self._after_close = not content
        return content

