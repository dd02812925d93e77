"""Byte-level BPE pre-tokenizers: how text is cut into words before merging, per tokenizer.ggml.pre.

Each pre-tokenizer is the list of regexes llama.cpp applies in turn: every regex cuts each piece
left by the previous one into its matches and the stretches between them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import regex

from kinetic.errors import ModelFileError
from kinetic.tokenizer.charclasses import compile_pattern, needs_exact

_CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

# llama.cpp runs the GPT-2 regex through a hand-written matcher that ends with a plain \s+ as well.
GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = _CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN35 = (
    _CONTRACTIONS
    + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# gpt-oss's (o200k): llama.cpp's form of it, whose lookaheads stand for the upper- and lower-case classes
_UPPER, _LOWER = r"(?:(?=[\p{L}])[^a-z])", r"(?:(?=[\p{L}])[^A-Z])"
GPT4O = (
    rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_CONTRACTIONS}?"
    rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_CONTRACTIONS}?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
HUNYUAN_DENSE = (
    r"\p{N}{1,3}",
    r"[一-龥぀-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
)
DEFAULT = (r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]")


@dataclass(frozen=True)
class PreTokenizer:
    """One tokenizer.ggml.pre value: its regexes and the options llama.cpp ties to it."""

    name: str
    patterns: tuple[str, ...]
    ignore_merges: bool = False  # a word that is itself a token is not merged
    clean_spaces: bool = True  # decoding removes the space before , . ? ! and some contractions
    add_bos: bool = False  # the default when the file has no tokenizer.ggml.add_bos_token

    @cached_property
    def _compiled(self) -> dict[bool, tuple[regex.Pattern, ...]]:
        # one capturing group around the whole regex, so split() keeps the matches
        return {exact: tuple(compile_pattern(f"({p})", exact) for p in self.patterns) for exact in (False, True)}

    def split(self, text: str) -> list[str]:
        """Cut text into the words BPE merges, each word separately."""
        pieces = [text]
        for pattern in self._compiled[needs_exact(text)]:
            pieces = [word for piece in pieces for word in pattern.split(piece) if word]
        return pieces


def _family(names: tuple[str, ...], patterns: tuple[str, ...], **options) -> dict[str, PreTokenizer]:
    return {name: PreTokenizer(name, patterns, **options) for name in names}


PRE_TOKENIZERS: dict[str, PreTokenizer] = {
    **_family(("llama3", "llama-v3", "llama-bpe", "lfm2", "falcon-h1"), (LLAMA3,), ignore_merges=True, add_bos=True),
    **_family(("dbrx",), (LLAMA3,)),
    **_family(("qwen2",), (QWEN2,), clean_spaces=False),
    **_family(("qwen35",), (QWEN35,), clean_spaces=False),
    **_family(("smollm",), (r"\p{N}", GPT2), clean_spaces=False),
    **_family(("refact",), (r"\p{N}", GPT2)),
    **_family(("gpt-2", "exaone4"), (GPT2,)),
    **_family(("hunyuan-dense",), HUNYUAN_DENSE, clean_spaces=False),
    **_family(("gpt-4o",), (GPT4O,), clean_spaces=False),
    **_family(("default",), DEFAULT),
}

SUPPORTED_PRE_TOKENIZERS: tuple[str, ...] = tuple(PRE_TOKENIZERS)


def pre_tokenizer(name: str | None) -> PreTokenizer:
    """The pre-tokenizer a BPE file names; a file that names none gets llama.cpp's default."""
    found = PRE_TOKENIZERS.get(name or "default")
    if found is None:
        raise ModelFileError(f'unsupported pre-tokenizer "{name}"')
    return found
