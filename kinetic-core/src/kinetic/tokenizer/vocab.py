"""The token list of a GGUF file: texts, scores, types and the attributes llama.cpp derives from them."""

from __future__ import annotations

import enum
from array import array
from typing import Any, Mapping, Sequence

import numpy as np

from kinetic.errors import ModelFileError


class TokenType(enum.IntEnum):
    """tokenizer.ggml.token_type values."""

    UNDEFINED = 0
    NORMAL = 1
    UNKNOWN = 2
    CONTROL = 3
    USER_DEFINED = 4
    UNUSED = 5
    BYTE = 6


class TokenAttr(enum.IntFlag):
    """Per-token attributes, llama.cpp's llama_token_attr bits."""

    UNDEFINED = 0
    UNKNOWN = 1 << 0
    UNUSED = 1 << 1
    NORMAL = 1 << 2
    CONTROL = 1 << 3
    USER_DEFINED = 1 << 4
    BYTE = 1 << 5
    NORMALIZED = 1 << 6
    LSTRIP = 1 << 7
    RSTRIP = 1 << 8
    SINGLE_WORD = 1 << 9


# attributes whose tokens are matched in raw text before tokenizing (parse_special)
SPECIAL_ATTRS = TokenAttr.CONTROL | TokenAttr.USER_DEFINED | TokenAttr.UNKNOWN

# attribute of each token type (the index); attributes are kept as plain ints, IntFlag is slow in bulk
_ATTR_OF_TYPE = np.array([0, TokenAttr.NORMAL, TokenAttr.UNKNOWN, TokenAttr.CONTROL, TokenAttr.USER_DEFINED,
                          TokenAttr.UNUSED, TokenAttr.BYTE], dtype=np.int64)


class Vocab:
    """Token texts, scores and attributes, and the text -> id lookup."""

    def __init__(self, texts: Sequence[str], scores: Sequence[float] | None, types: Sequence[int] | None):
        self.texts = list(texts)
        if "" in self.texts:  # llama.cpp names empty tokens so that every text is unique
            self.texts = [text or f"[EMPTY_{i}]" for i, text in enumerate(self.texts)]
        self.ids = dict(zip(self.texts, range(len(self.texts))))
        # float32 as the file stores them, 4 bytes each rather than a float object each
        self.scores = array("f", scores if scores is not None else bytes(4 * len(self.texts)))
        if types is None:
            self.attrs = [int(TokenAttr.NORMAL)] * len(self.texts)
        else:
            types = np.asarray(types, dtype=np.int64)
            known = (types >= 0) & (types < len(_ATTR_OF_TYPE))
            self.attrs = np.where(known, _ATTR_OF_TYPE[np.where(known, types, 0)], 0).tolist()

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Vocab:
        texts = metadata.get("tokenizer.ggml.tokens")
        if texts is None or len(texts) == 0:
            raise ModelFileError("the file has no tokenizer.ggml.tokens")
        scores = _array(metadata, "tokenizer.ggml.scores", len(texts))
        return cls(texts, scores, _array(metadata, "tokenizer.ggml.token_type", len(texts)))

    def __len__(self) -> int:
        return len(self.texts)

    def get(self, text: str) -> int | None:
        return self.ids.get(text)

    def check(self, token: int) -> int:
        """The token id, if it is one of this vocabulary's (a negative index must not wrap around)."""
        if not 0 <= token < len(self.texts):
            raise ValueError(f"token id {token} is not in the vocabulary of {len(self.texts)} tokens")
        return token

    def has(self, token: int, attr: TokenAttr) -> bool:
        return bool(self.attrs[token] & attr)

    def add_attr(self, token: int, attr: TokenAttr) -> None:
        self.attrs[token] |= int(attr)

    def clear_attr(self, token: int, attr: TokenAttr) -> None:
        self.attrs[token] &= ~int(attr)

    def set_attr(self, token: int, attr: TokenAttr) -> None:
        self.attrs[token] = int(attr)

    def special_tokens(self) -> list[int]:
        """Tokens split out of raw text before tokenizing, longest text first."""
        found = np.flatnonzero(np.asarray(self.attrs) & int(SPECIAL_ATTRS)).tolist()
        return sorted(found, key=lambda i: -len(self.texts[i]))


def _array(metadata: Mapping[str, Any], key: str, n: int) -> list | None:
    values = metadata.get(key)
    if values is None:
        return None
    if len(values) < n:
        raise ModelFileError(f"{key} has {len(values)} entries for {n} tokens")
    return np.asarray(values)[:n].tolist()


def token_text(metadata: Mapping[str, Any], id_key: str) -> str:
    """The text of the token whose id metadata gives under id_key, or "" when the model has none."""
    token_id = metadata.get(id_key)
    tokens = metadata.get("tokenizer.ggml.tokens") or ()
    if isinstance(token_id, int) and 0 <= token_id < len(tokens):
        return str(tokens[token_id])
    return ""
