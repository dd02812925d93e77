"""DRY, "Don't Repeat Yourself" (p-e-w, text-generation-webui PR #5677), as llama.cpp runs it (its port
of koboldcpp PR #982): a token that would extend a sequence already seen in the history loses
multiplier * base ** (repeat length - allowed length) from its logit. Sequence breakers (newline,
colon, ...) end a repetition, so a repeat never reaches back across one.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Protocol, Sequence

import numpy as np

from kinetic.sampling.filters import recent_tokens

MAX_BREAKER_BYTES = 40  # llama.cpp truncates a breaker to this many bytes
MAX_TAIL_TOKENS = 20  # and its tail after the head token to this many tokens
FLOAT32_MAX_LOG = 88.7228391  # llama.cpp caps the exponent so that base ** exponent stays a finite float32


class BreakerVocabulary(Protocol):
    """What resolving breakers needs from a tokenizer (kinetic.tokenizer.Tokenizer has it)."""

    n_vocab: int

    def token_bytes(self, token: int, special: bool = True) -> bytes: ...

    def encode(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]: ...


@dataclasses.dataclass(frozen=True)
class DryBreakers:
    """Sequence breakers as token sequences: a head token, then the tail tokens that must follow it."""

    tails: Mapping[int, tuple[tuple[int, ...], ...]]  # head -> its tails; () when the head alone breaks
    heads: np.ndarray  # [h] int64, sorted
    lone_heads: np.ndarray  # [l] int64, sorted: heads with an empty tail

    @classmethod
    def from_tails(cls, tails: Mapping[int, Sequence[Sequence[int]]]) -> DryBreakers:
        frozen = {int(head): tuple(tuple(int(t) for t in tail) for tail in found) for head, found in tails.items()}
        heads = np.array(sorted(frozen), dtype=np.int64)
        lone = np.array(sorted(head for head, found in frozen.items() if () in found), dtype=np.int64)
        return cls(frozen, heads, lone)


NO_BREAKERS = DryBreakers.from_tails({})


def resolve_breakers(texts: Sequence[str], vocab: BreakerVocabulary) -> DryBreakers:
    """Breaker texts as token sequences, as llama.cpp finds them: every token containing a breaker
    breaks alone; a token ending in the start of a breaker breaks when the rest's tokens follow it.
    It reads every token's text; callers cache the result per model and breaker list."""
    needles = [needle for needle in (text.encode("utf-8")[:MAX_BREAKER_BYTES] for text in texts) if needle]
    if not needles:
        return NO_BREAKERS
    pieces = [vocab.token_bytes(token, special=True) for token in range(vocab.n_vocab)]
    tails: dict[int, list[tuple[int, ...]]] = {}
    for needle in needles:
        for token, tail in _breaking_tokens(pieces, needle, vocab):
            found = tails.setdefault(token, [])
            if tail not in found:
                found.append(tail)
    return DryBreakers.from_tails(tails)


def _breaking_tokens(pieces: list[bytes], needle: bytes, vocab: BreakerVocabulary):
    """(token, tail) for each token that contains `needle` (tail ()) or ends in a proper prefix of it."""
    containing = [token for token, piece in enumerate(pieces) if needle in piece]
    yield from ((token, ()) for token in containing)
    skip = set(containing)
    for overlap in range(1, len(needle)):
        start = needle[:overlap]
        ending = [t for t, piece in enumerate(pieces) if piece.endswith(start) and t not in skip]
        if ending:
            rest = needle[overlap:].decode("utf-8", errors="replace")
            tail = tuple(vocab.encode(rest, add_special=False)[:MAX_TAIL_TOKENS])
            yield from ((token, tail) for token in ending)


def apply_dry(
    scores: np.ndarray,
    history: Sequence[int],
    multiplier: float,
    base: float,
    allowed_length: int,
    last_n: int,
    breakers: DryBreakers,
) -> None:
    """Penalize every token that would extend a repetition longer than allowed_length."""
    # scores: [n_vocab] float64, changed in place
    if multiplier == 0.0 or base < 1.0 or last_n == 0:
        return
    window = recent_tokens(history, last_n)
    if window.size <= allowed_length:
        return
    limit = _repetition_limit(window, breakers)
    if limit < allowed_length:
        return
    tokens, lengths = _longest_repeat_per_follower(window, limit, allowed_length)
    keep = (tokens < scores.size) & ~np.isin(tokens, breakers.lone_heads)
    exponents = lengths[keep] - allowed_length
    if base > 1.000001:
        exponents = np.minimum(exponents, int(FLOAT32_MAX_LOG / np.log(base)))
    scores[tokens[keep]] -= multiplier * base ** exponents.astype(np.float64)


def _repetition_limit(window: np.ndarray, breakers: DryBreakers) -> int:
    """How many tokens a repetition may span: back to just after the latest complete breaker."""
    # window: [n] int64
    for position in np.flatnonzero(np.isin(window, breakers.heads))[::-1]:
        after = window.size - 1 - int(position)  # tokens after the head
        longest = -1
        for tail in breakers.tails[int(window[position])]:
            fits = longest < len(tail) <= after
            if fits and window[position + 1 : position + 1 + len(tail)].tolist() == list(tail):
                longest = len(tail)
        if longest >= 0:
            return after - longest
    return window.size


def _longest_repeat_per_follower(
    window: np.ndarray, limit: int, allowed_length: int
) -> tuple[np.ndarray, np.ndarray]:
    """For each token that follows an earlier occurrence of the window's end, the longest such
    repeat (capped at limit), where that is at least allowed_length: (tokens, lengths)."""
    # window: [n] int64; returns ([t] int64 unique tokens, [t] int64 lengths)
    last = window.size - 1
    lengths = np.zeros(last, dtype=np.int64)  # lengths[j]: tokens ending at j that equal the window's last ones
    active = np.flatnonzero(window[:-1] == window[-1])
    length = 0
    while active.size and length < limit:
        length += 1
        lengths[active] = length
        active = active[active >= length]
        active = active[window[active - length] == window[last - length]]
    long_enough = lengths >= allowed_length
    tokens, which = np.unique(window[1:][long_enough], return_inverse=True)
    longest = np.zeros(tokens.size, dtype=np.int64)
    np.maximum.at(longest, which, lengths[long_enough])
    return tokens, longest
