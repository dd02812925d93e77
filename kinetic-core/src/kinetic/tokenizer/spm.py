"""SentencePiece (tokenizer.ggml.model = llama): merge by score, bytes as <0xXX> tokens.

llama.cpp merges over a whole stretch of text at once: the adjacent pair whose merged text is the
highest-scoring token goes first. A merge can only make a vocabulary token, so where no token
contains the two characters on either side of a point, nothing ever merges across it; the text is
cut at such points before each "▁" and the pieces are merged (and cached) one by one.
"""

from __future__ import annotations

import regex

from kinetic.tokenizer.word_cache import WordCache
from kinetic.tokenizer.merging import merge_symbols
from kinetic.tokenizer.vocab import Vocab

SPACE = "▁"  # U+2581, how SentencePiece vocabularies spell a space


class SpmModel:
    """Turns raw text into token ids; results are cached per piece between cuts."""

    def __init__(self, vocab: Vocab, unk_id: int | None):
        self._vocab = vocab
        self._byte_ids = [_byte_token(vocab, byte, unk_id) for byte in range(256)]
        # characters that some token has right before a "▁": no cut is made after them (nor after
        # NUL, the separator used to find them)
        kept = "".join(sorted(set(regex.findall(f"[^\x00](?={SPACE})", "\x00".join(vocab.texts))) | {"\x00"}))
        self._cuts = regex.compile(f"(?<![{regex.escape(kept)}])(?={SPACE})")
        self._cache = WordCache()

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in self._cuts.split(text.replace(" ", SPACE)):
            if not piece:
                continue
            ids.extend(self._cache.ids(piece, self._encode_piece))
        return ids

    def _rank(self, text: str) -> float | None:
        """The best merge makes the highest-scoring token: rank = -score."""
        token = self._vocab.ids.get(text)
        return None if token is None else -self._vocab.scores[token]

    def _encode_piece(self, piece: str) -> list[int]:
        ids = []
        for symbol in merge_symbols(list(piece), self._rank, ""):
            token = self._vocab.get(symbol)
            if token is not None:
                ids.append(token)
            else:
                byte_ids = (self._byte_ids[byte] for byte in symbol.encode("utf-8", "surrogatepass"))
                ids.extend(t for t in byte_ids if t is not None)
        return ids


def _byte_token(vocab: Vocab, byte: int, unk_id: int | None) -> int | None:
    """<0xXX>, else the byte itself as a one-character token (only ASCII can be one)."""
    token = vocab.get(f"<0x{byte:02X}>")
    if token is None and byte < 0x80:
        token = vocab.get(chr(byte))
    return token if token is not None else unk_id
