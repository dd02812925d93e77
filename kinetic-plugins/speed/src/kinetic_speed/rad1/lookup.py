"""Prompt-lookup drafting (Saxena, 2023): the tokens that followed the latest earlier occurrence of the
current few tokens, in the generation's own context or in everything the process has seen."""

from __future__ import annotations

from typing import Optional, Sequence

NGRAMS = (4, 3, 2)  # suffix lengths tried, longest first: a longer match is a better guess
SEPARATOR = -1  # between requests in the token log, so no n-gram spans two of them


class NgramIndex:
    """A growing token list and, for each n-gram, the index just after its latest occurrence."""

    def __init__(self, tokens: Sequence[int] = ()):
        self.tokens: list[int] = list(tokens)
        self._after: dict[tuple[int, ...], int] = {}
        self._indexed = 0  # the n-grams ending at or before this index are in _after

    def find(self, suffix: Sequence[int], end: Optional[int] = None) -> Optional[int]:
        """The index just after the latest occurrence, ending at or before `end` (default: anywhere), of
        suffix's last n tokens, for the longest n in NGRAMS that occurs; None if none does."""
        self._index_until(len(self.tokens) if end is None else end)
        for n in NGRAMS:
            if len(suffix) >= n:
                start = self._after.get(tuple(suffix[-n:]))
                if start is not None:
                    return start
        return None

    def continuation(self, suffix: Sequence[int], limit: int) -> list[int]:
        """Up to limit tokens that followed the latest occurrence of suffix's end, up to a SEPARATOR."""
        start = self.find(suffix)
        if start is None:
            return []
        out = self.tokens[start : start + limit]
        return out[: out.index(SEPARATOR)] if SEPARATOR in out else out

    def _index_until(self, end: int) -> None:
        for stop in range(self._indexed + 1, end + 1):
            for n in NGRAMS:
                if stop >= n:
                    self._after[tuple(self.tokens[stop - n : stop])] = stop
        self._indexed = max(self._indexed, end)


class ContextSource:
    """Drafts from the generation's own tokens, prompt and answer so far."""

    name = "context"

    def __init__(self):
        self._index = NgramIndex()

    def begin(self, context: Sequence[int]) -> None:
        self._index = NgramIndex(context)

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        tokens = self._index.tokens
        tokens.extend(history[len(tokens) :])
        # the suffix is its own latest occurrence: look among the n-grams that end before it does
        start = self._index.find(history, end=len(history) - 1)
        if start is None:
            return []
        draft: list[int] = []
        for at in range(start, start + limit):  # past the end, the draft goes on with itself (a repeat)
            draft.append(tokens[at] if at < len(tokens) else draft[at - len(tokens)])
        return draft


class TokenLog:
    """Every token the process has seen, request after request, bounded: past max_tokens the older half is
    forgotten. One log serves every generation of a loaded model."""

    name = "earlier requests"

    def __init__(self, max_tokens: int = 1 << 20):
        self.max_tokens = max_tokens
        self._index = NgramIndex()

    def record(self, history: Sequence[int]) -> None:
        tokens = [*self._index.tokens, *history, SEPARATOR]
        if len(tokens) > self.max_tokens:
            tokens = tokens[-self.max_tokens // 2 :]
            self._index = NgramIndex(tokens)
        else:
            self._index.tokens = tokens

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        return self._index.continuation(history, limit)
