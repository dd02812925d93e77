"""Prompt-lookup drafting (Saxena, 2023): the tokens that followed the latest earlier occurrence of the
current few tokens, in the generation's own context or in everything the process has seen."""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

NGRAMS = (4, 3, 2)  # suffix lengths tried, longest first: a longer match is a better guess
SEPARATOR = -1  # between requests in the token log, so no n-gram spans two of them
RESYNC_WINDOW = 8  # how far past an edit the followed place looks for the answer's next token
MAX_EDIT = 16  # tokens that differ from the followed place before it is given up
CONFIRMED = 2  # tokens in a row that must occur at the followed place before it drafts again


class NgramIndex:
    """A growing token list and, for each n-gram, the index just after its latest occurrence."""

    def __init__(self, tokens: Sequence[int] = ()):
        self.tokens: list[int] = list(tokens)
        self._after: dict[tuple[int, ...], int] = {}
        self._indexed = 0  # the n-grams ending at or before this index are in _after

    def find(self, suffix: Sequence[int], end: Optional[int] = None, shortest: int = 2) -> Optional[int]:
        """The index just after the latest occurrence, ending at or before `end` (default: anywhere), of
        suffix's last n tokens, for the longest n >= shortest in NGRAMS that occurs; None if none does."""
        self._index_until(len(self.tokens) if end is None else end)
        for n in NGRAMS:
            if len(suffix) >= n >= shortest:
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
    """Drafts from the generation's own tokens, prompt and answer so far.

    Once a draft has come from some place in the context, the source follows that place as the answer
    goes on: a token that differs from it (an edit) leaves the place where it was, and the first token
    after the edit that occurs a little further on picks it up again there, and once the next token
    confirms it, drafting goes on from there: a rewrite with a name changed drafts again right after
    each change instead of searching the whole context anew."""

    name = "context"

    def __init__(self):
        self._index = NgramIndex()
        self._place: Optional[_Place] = None

    def begin(self, context: Sequence[int]) -> None:
        self._index = NgramIndex(context)
        self._place = None

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        tokens = self._index.tokens
        tokens.extend(history[len(tokens) :])
        start = self._follow(history) if self._place is not None else None
        if start is None:  # the suffix is its own latest occurrence: look among n-grams ending before it
            in_edit = self._place is not None  # then only a longer match draws a draft from elsewhere
            start = self._index.find(history, end=len(history) - 1, shortest=3 if in_edit else 2)
            if not in_edit and start is not None:
                self._place = _Place(len(history), start)
        if start is None:
            return []
        draft: list[int] = []
        for at in range(start, start + limit):  # past the end, the draft goes on with itself (a repeat)
            draft.append(tokens[at] if at < len(tokens) else draft[at - len(tokens)])
        return draft

    def _follow(self, history: Sequence[int]) -> Optional[int]:
        """Where the followed place says history goes on, if its last token matched there; else None (in
        an edit, or the place given up after too many)."""
        place = self._place
        tokens, at, edited, run = self._index.tokens, place.next, place.edited, place.run
        for i in range(place.seen, len(history)):
            token, ahead = history[i], tokens[at : min(at + RESYNC_WINDOW, i)]
            if token in ahead:
                at, run = at + ahead.index(token) + 1, run + 1
            else:
                edited, run = edited + 1, 0
        self._place = _Place(len(history), at, edited, run) if edited <= MAX_EDIT else None
        return at if run >= CONFIRMED and self._place is not None else None


class _Place(NamedTuple):
    seen: int  # history[:seen] has been followed
    next: int  # the index in the context of the token expected after history[:seen]
    edited: int = 0  # tokens since the place was found that did not occur there
    run: int = CONFIRMED  # history's last tokens that occurred there in a row (0: in an edit)


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
