"""Splitting raw text on special tokens before tokenizing, in llama.cpp's order.

llama.cpp takes the special tokens longest first and cuts every remaining stretch of text at each
occurrence of the current one. Only the few tokens that occur in the text matter, so they are
found first with one regex built as a trie of all special texts, then cut in that same order.
"""

from __future__ import annotations

import re
from functools import cached_property

from kinetic.tokenizer.vocab import TokenAttr, Vocab

_C_SPACE = " \t\n\v\f\r"  # what C's isspace() strips around LSTRIP/RSTRIP tokens


class SpecialSplitter:
    """Cuts text into raw stretches (str) and special token ids (int)."""

    def __init__(self, vocab: Vocab):
        self._vocab = vocab
        order = vocab.special_tokens()
        skipped_unless_parsing = int(TokenAttr.CONTROL | TokenAttr.UNKNOWN)
        self._rank = {token: rank for rank, token in enumerate(order)}
        self._all = {vocab.texts[t]: t for t in order}
        # without parse_special, user-defined tokens are still split out, control ones are not
        self._user = {vocab.texts[t]: t for t in order if not vocab.attrs[t] & skipped_unless_parsing}
        self._strips = {t: (vocab.has(t, TokenAttr.LSTRIP), vocab.has(t, TokenAttr.RSTRIP)) for t in order}

    def split(self, text: str, parse_special: bool) -> list[str | int]:
        specials = self._all if parse_special else self._user
        if not specials or not text:
            return [text] if text else []
        finder = self._finder_all if parse_special else self._finder_user
        order = self._occurring(text, specials, finder)
        texts = [self._vocab.texts[token] for token in order]
        out: list[str | int] = []
        # a stretch cut by the n-th token can hold only tokens after it: each carries where to go on
        pending: list[tuple[str | int, int]] = [(text, 0)]
        while pending:
            fragment, start = pending.pop()
            if isinstance(fragment, int) or not finder.search(fragment):
                out.append(fragment)
                continue
            n = next((n for n in range(start, len(order)) if texts[n] in fragment), None)
            if n is None:
                out.append(fragment)
            else:
                pending.extend((piece, n + 1) for piece in reversed(self._cut(fragment, order[n])))
        return out

    @cached_property
    def _finder_all(self) -> re.Pattern:
        return _trie_finder(self._all)

    @cached_property
    def _finder_user(self) -> re.Pattern:
        return _trie_finder(self._user)

    def _occurring(self, text: str, specials: dict[str, int], finder: re.Pattern) -> list[int]:
        """Special tokens that may occur in text, in cutting order (a superset is harmless)."""
        found = set()
        for longest in set(finder.findall(text)):
            # the finder reports the longest token at each place; shorter ones there are its prefixes
            found.update(specials[longest[:n]] for n in range(1, len(longest) + 1) if longest[:n] in specials)
        return sorted(found, key=self._rank.__getitem__)

    def _cut(self, fragment: str, token: int) -> list[str | int]:
        """Cut at each occurrence of the token, left to right, stripping spaces as its attributes ask."""
        text = self._vocab.texts[token]
        lstrip, rstrip = self._strips[token]
        out: list[str | int] = []
        start = 0
        while (at := fragment.find(text, start)) >= 0:
            left = fragment[start:at]
            if lstrip:
                left = left.rstrip(_C_SPACE)
            if left:
                out.append(left)
            out.append(token)
            start = at + len(text)
            if rstrip:
                start = len(fragment) - len(fragment[start:].lstrip(_C_SPACE))
        if start < len(fragment):
            out.append(fragment[start:])
        return out


def _trie_finder(specials: dict[str, int]) -> re.Pattern:
    """A regex reporting, at every position, the longest special text starting there."""
    trie: dict = {}
    for text in specials:
        node = trie
        for char in text:
            node = node.setdefault(char, {})
        node[""] = {}
    first = "".join(sorted({text[0] for text in specials}))
    # the leading class lets the engine skip quickly over places no token starts at
    return re.compile(f"(?=[{re.escape(first)}])(?=({_trie_pattern(trie)}))", re.DOTALL)


def _trie_pattern(node: dict) -> str:
    branches = []
    for char, child in node.items():
        if not char:
            continue
        while len(child) == 1 and "" not in child:  # a chain without branches or ends: one literal
            ((next_char, child),) = child.items()
            char += next_char
        branches.append(re.escape(char) + _trie_pattern(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    # a token may end here: the longer branches are tried first, then the empty match
    return f"(?:{body})?" if "" in node else body
