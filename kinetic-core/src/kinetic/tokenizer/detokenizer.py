"""Token ids back to text: each token's bytes, llama.cpp's detokenize rules, and a streaming decoder."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable

from kinetic.tokenizer.bytelevel import CHAR_BYTES
from kinetic.tokenizer.spm import SPACE
from kinetic.tokenizer.vocab import TokenAttr, Vocab

_HIDDEN_UNLESS_SPECIAL = int(TokenAttr.CONTROL | TokenAttr.UNKNOWN)
_SHOWN_AS_WRITTEN = int(TokenAttr.CONTROL | TokenAttr.UNKNOWN | TokenAttr.USER_DEFINED)

# clean_up_tokenization_spaces, as llama.cpp applies it: three passes over the whole text
_CLEAN_PASSES = (
    (re.compile(r" (?=[?!.,])"), ""),
    (re.compile(r" ' "), "'"),
    (re.compile(r" '(?=[sm]|re|ve)"), "'"),
)


class Pieces:
    """The bytes each token stands for, computed on first use."""

    def __init__(self, vocab: Vocab, byte_level: bool):
        self._vocab = vocab
        self._byte_level = byte_level
        self._cache: dict[int, bytes] = {}

    def __call__(self, token: int, special: bool = True) -> bytes:
        """A token's bytes; control and unknown tokens are empty unless special."""
        attr = self._vocab.attrs[self._vocab.check(token)]
        if not special and attr & _HIDDEN_UNLESS_SPECIAL:
            return b""
        piece = self._cache.get(token)
        if piece is None:
            piece = self._cache[token] = self._compute(token, attr)
        return piece

    def _compute(self, token: int, attr: int) -> bytes:
        text = self._vocab.texts[token]
        if attr & _SHOWN_AS_WRITTEN:
            return text.encode("utf-8", "surrogatepass")
        if attr & TokenAttr.NORMAL:
            if self._byte_level:
                return _byte_level_bytes(text)
            return text.replace(SPACE, " ").encode("utf-8", "surrogatepass")
        if attr & TokenAttr.BYTE:
            return bytes([int(text[3:5], 16)])  # <0xXX>
        return b""  # unused and undefined tokens


def _byte_level_bytes(text: str) -> bytes:
    if all(char in CHAR_BYTES for char in text):
        return bytes(CHAR_BYTES[char] for char in text)
    # llama.cpp marks characters outside the byte alphabet this way
    out = bytearray()
    for char in text:
        if char in CHAR_BYTES:
            out.append(CHAR_BYTES[char])
        else:
            utf8 = char.encode("utf-8", "surrogatepass")
            out += f"[UNK_BYTE_0x{utf8.hex()}{text}]".encode("utf-8", "surrogatepass")
    return bytes(out)


def clean_spaces(text: str) -> str:
    """Drop the space before , . ? ! and in " ' ", " 's", " 'm", " 're", " 've"."""
    for pattern, replacement in _CLEAN_PASSES:
        text = pattern.sub(replacement, text)
    return text


class StreamingDetokenizer:
    """Feed token ids as they come; get text that never splits a UTF-8 character.

    Bytes that do not form valid UTF-8 come out as U+FFFD as soon as that is certain, and
    whatever is still pending when the stream ends comes out of finish(): nothing is lost.
    The text is the tokens' pieces joined, as llama-server streams them.
    """

    def __init__(self, pieces: Pieces, special: bool = True, shown: frozenset[int] = frozenset()):
        self._pieces = pieces
        self._special = special
        self._shown = shown  # special tokens written out even when special is off (tool-call markers)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, tokens: int | Iterable[int]) -> str:
        if not isinstance(tokens, Iterable):  # one id (an int or a numpy integer)
            tokens = (tokens,)
        data = b"".join(self._pieces(t, self._special or t in self._shown) for t in tokens)
        return self._decoder.decode(data)

    def finish(self) -> str:
        """The text still held back (an incomplete character becomes U+FFFD); the stream can go on."""
        text = self._decoder.decode(b"", final=True)
        self._decoder.reset()
        return text
