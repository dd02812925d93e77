"""WordPiece (tokenizer.ggml.model = bert): BERT's normalizer, then longest-match pieces per word.

GGUF files spell a word start as "▁" (where BERT's vocab.txt marks continuations with "##").
"""

from __future__ import annotations

import unicodedata

from kinetic.tokenizer.word_cache import WordCache
from kinetic.tokenizer.charclasses import compile_pattern
from kinetic.tokenizer.spm import SPACE
from kinetic.tokenizer.vocab import Vocab

_CJK = r"\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f\U0002b740-\U0002b81f" \
       r"\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f"
_ASCII_SYMBOLS = r"\$\+<=>\^`\|~"
# punctuation, ASCII symbols and CJK ideographs are words of their own; whitespace separates words
_WORDS = compile_pattern(rf"\p{{P}}|[{_ASCII_SYMBOLS}{_CJK}]|[^\s\p{{P}}{_ASCII_SYMBOLS}{_CJK}]+")
_DROPPED = compile_pattern(r"[\x00\ufffd]|(?!\s)\p{C}")
_MARKS = compile_pattern(r"\p{M}")


class WordPieceModel:
    def __init__(self, vocab: Vocab, unk_id: int | None, lowercase: bool, strip_accents: bool):
        self._ids = {text.encode("utf-8", "surrogatepass"): token for text, token in vocab.ids.items()}
        self._longest = max(map(len, self._ids))
        self._unk = [unk_id] if unk_id is not None else []
        self._lowercase = lowercase
        self._strip_accents = strip_accents
        self._cache = WordCache()

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in _WORDS.findall(self._normalize(text)):
            ids.extend(self._cache.ids(word, self._encode_word))
        return ids

    def _normalize(self, text: str) -> str:
        if self._strip_accents:
            # llama.cpp keeps only the first code point of each character's decomposition
            text = text.translate({ord(c): unicodedata.normalize("NFD", c)[0] for c in set(text) if c >= "\x80"})
        text = _DROPPED.sub("", text)
        if self._strip_accents:
            text = _MARKS.sub("", text)
        if self._lowercase:
            # one code point for one: the simple case mapping, no final-sigma rule
            text = text.translate({ord(c): c.lower()[0] for c in set(text) if c.lower() != c})
        return text

    def _encode_word(self, word: str) -> list[int]:
        """Longest vocabulary match from the left; a word with an unmatched part is one unknown token."""
        data = (SPACE + word).encode("utf-8", "surrogatepass")
        ids, start = [], 0
        while start < len(data):
            for end in range(min(len(data), start + self._longest), start, -1):
                token = self._ids.get(data[start:end])
                if token is not None:
                    ids.append(token)
                    start = end
                    break
            else:
                return self._unk
        return ids
