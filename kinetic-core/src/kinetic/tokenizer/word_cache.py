"""The bounded cache each tokenizer model keeps of the ids of words (or pieces) it has encoded."""

from __future__ import annotations

from typing import Callable

LIMIT = 200_000  # entries; the cache starts over when full


class WordCache(dict):
    """word -> its ids, computed once by encode until LIMIT words are held, then started over."""

    def ids(self, word: str, encode: Callable[[str], list[int]]) -> list[int]:
        found = self.get(word)
        if found is None:
            if len(self) >= LIMIT:
                self.clear()
            found = self[word] = encode(word)
        return found
