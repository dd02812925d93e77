"""llama-server's line limits for code completion: n_indent and t_max_predict_ms.

n_indent ends the answer at a line indented less than n_indent characters, and cuts that line's text;
t_max_predict_ms ends it at a new line once generating has taken longer than that. Run feeds every token's
text here, in llama-server's order (its process_token in tools/server/server-context.cpp): a line is
judged from the token after the one that found its newline on, one newline found per token.
"""

from __future__ import annotations

import time
from typing import Optional


class LineLimits:
    def __init__(self, n_indent: int = 0, t_max_predict_ms: int = 0):
        self.n_indent = n_indent
        self.t_max_seconds = t_max_predict_ms / 1000
        self.text = ""  # the answer so far
        self.has_new_line = False
        self.line_start = 0  # where the line being judged starts (0: none yet)
        self.started: Optional[float] = None
        self.kept: Optional[int] = None  # with a too shallow line: the answer's length, that line's text cut
        self.ended = False  # a limit ended the answer

    @property
    def active(self) -> bool:
        return self.n_indent > 0 or self.t_max_seconds > 0

    def feed(self, text: str) -> bool:
        """Take a token's text; true once the answer must end here."""
        self.ended = self._ends(text)
        return self.ended

    def _ends(self, text: str) -> bool:
        self.started = self.started or time.perf_counter()
        self.text += text
        if self.has_new_line and self.n_indent > 0:
            if self.line_start > 0 and self._too_shallow():
                return True
            found = self.text.find("\n", self.line_start)
            if found >= 0:
                self.line_start = found + 1
        if "\n" in text:
            self.has_new_line = True
            return 0 < self.t_max_seconds < time.perf_counter() - self.started
        return False

    def _too_shallow(self) -> bool:
        at = self.line_start
        while at < len(self.text) and self.text[at] in " \t":
            at += 1
        if at < len(self.text) and at - self.line_start < self.n_indent:
            self.kept = at
            return True
        return False

    def cut(self, answer: str) -> str:
        """The answer as llama-server returns it whole: without the too shallow line's text."""
        return answer if self.kept is None else answer[: self.kept]
