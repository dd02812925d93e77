"""Byte-level BPE (tokenizer.ggml.model = gpt2): pre-tokenize, spell bytes, merge by rank."""

from __future__ import annotations

from typing import Sequence

from kinetic.tokenizer.word_cache import WordCache
from kinetic.tokenizer.bytelevel import encode_bytes
from kinetic.tokenizer.merging import merge_symbols
from kinetic.tokenizer.pretokenizers import PreTokenizer
from kinetic.tokenizer.vocab import Vocab



class BpeModel:
    """Turns raw text into token ids; results are cached per pre-tokenized word."""

    def __init__(self, vocab: Vocab, merges: Sequence[str], pre: PreTokenizer):
        self._vocab = vocab
        self._pre = pre
        # merges are stored as "left right"; the first listing of a pair gives its rank (inserted last)
        self._ranks = dict(zip(reversed(merges), range(len(merges) - 1, -1, -1)))
        self._cache = WordCache()

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self._pre.split(text):
            ids.extend(self._cache.ids(word, self._encode_word))
        return ids

    def _encode_word(self, text: str) -> list[int]:
        word = encode_bytes(text)
        whole = self._vocab.get(word)
        if whole is not None and self._pre.ignore_merges:
            return [whole]
        ids = []
        for symbol in merge_symbols(list(word), self._ranks.get, " "):
            token = self._vocab.get(symbol)
            if token is not None:
                ids.append(token)
            else:
                # llama.cpp looks each UTF-8 byte up as a one-byte token, which only ASCII can match
                ascii_tokens = (self._vocab.get(char) for char in symbol if char < "\x80")
                ids.extend(t for t in ascii_tokens if t is not None)
        return ids
