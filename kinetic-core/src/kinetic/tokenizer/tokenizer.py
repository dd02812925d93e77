"""The tokenizer of a GGUF file, read from its metadata: text to token ids and back, as llama.cpp does."""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike
from typing import Any, Iterable, Mapping

from kinetic.errors import ModelFileError
from kinetic.tokenizer.bpe import BpeModel
from kinetic.tokenizer.detokenizer import Pieces, StreamingDetokenizer, clean_spaces
from kinetic.tokenizer.pretokenizers import PreTokenizer, pre_tokenizer
from kinetic.tokenizer.special_ids import SpecialTokens, settle
from kinetic.tokenizer.special_split import SpecialSplitter
from kinetic.tokenizer.spm import SpmModel
from kinetic.tokenizer.vocab import Vocab
from kinetic.tokenizer.wordpiece import WordPieceModel


TextModel = BpeModel | SpmModel | WordPieceModel


@dataclass(frozen=True)
class _Defaults:
    """What llama.cpp assumes for a tokenizer model when the file does not say."""

    ids: Mapping[str, int]
    add_bos: bool
    add_space_prefix: bool
    clean_spaces: bool
    add_sep: bool = False  # a separator between a pair's texts (a reranker's query and document)


_DEFAULTS = {
    "gpt2": _Defaults({"bos_id": 11, "eos_id": 11}, add_bos=False, add_space_prefix=False, clean_spaces=True),
    "llama": _Defaults({"bos_id": 1, "eos_id": 2, "unk_id": 0},
                       add_bos=True, add_space_prefix=True, clean_spaces=False),
    "bert": _Defaults({"bos_id": 101, "unk_id": 100, "sep_id": 102, "pad_id": 0, "mask_id": 103},
                      add_bos=True, add_space_prefix=False, clean_spaces=True, add_sep=True),
}


class Tokenizer:
    """Byte-level BPE (gpt2), SentencePiece (llama) or WordPiece (bert), from GGUF metadata."""

    def __init__(self, metadata: Mapping[str, Any]):
        self.model = str(metadata.get("tokenizer.ggml.model", ""))
        defaults = _DEFAULTS.get(self.model)
        if defaults is None:
            raise ModelFileError(f'unsupported tokenizer "{self.model}"' if self.model else "the file has no tokenizer")
        pre = pre_tokenizer(metadata.get("tokenizer.ggml.pre")) if self.model == "gpt2" else None
        self.pre = pre.name if pre else None
        self.vocab = Vocab.from_metadata(metadata)
        self.special: SpecialTokens = settle(self.vocab, metadata, defaults.ids)  # all ids, FIM ones too
        self.bos_id = self.special.bos_id
        self.eos_id = self.special.eos_id
        self.eot_id = self.special.eot_id
        self.eom_id = self.special.eom_id
        self.unk_id = self.special.unk_id
        self.sep_id = self.special.sep_id
        self.pad_id = self.special.pad_id
        self.mask_id = self.special.mask_id
        self.eog_ids = self.special.eog_ids

        def flag(key: str, default: bool) -> bool:
            return bool(metadata.get(f"tokenizer.ggml.{key}", default))

        self.add_bos = flag("add_bos_token", pre.add_bos if pre else defaults.add_bos)
        self.add_eos = flag("add_eos_token", False)
        self.add_sep = flag("add_sep_token", defaults.add_sep)
        self.add_space_prefix = flag("add_space_prefix", defaults.add_space_prefix)
        self._clean_spaces = pre.clean_spaces if pre else defaults.clean_spaces
        self._splitter = SpecialSplitter(self.vocab)
        self._pieces = Pieces(self.vocab, byte_level=self.model == "gpt2")
        self._model = self._text_model(metadata, pre)
        self._prefix, self._suffix = self._wrapping()

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Tokenizer:
        return cls(metadata)

    def _text_model(self, metadata: Mapping[str, Any], pre: PreTokenizer | None) -> TextModel:
        """What turns a stretch of text without special tokens into ids."""
        if self.model == "gpt2":
            merges = metadata.get("tokenizer.ggml.merges")
            if merges is None:
                raise ModelFileError("the file's BPE tokenizer has no tokenizer.ggml.merges")
            return BpeModel(self.vocab, list(merges), pre)
        if self.model == "llama":
            return SpmModel(self.vocab, self.unk_id)
        lowercase = bool(metadata.get("tokenizer.ggml.normalizer.lowercase", True))
        strip_accents = bool(metadata.get("tokenizer.ggml.normalizer.strip_accents", lowercase))
        return WordPieceModel(self.vocab, self.unk_id, lowercase, strip_accents)

    def _wrapping(self) -> tuple[list[int], list[int]]:
        """The ids add_special puts before and after the text."""
        if self.model == "bert":  # [CLS] ... [SEP], whatever the flags say
            before, after = [self.bos_id], [self.sep_id]
        else:
            before = [self.bos_id] if self.add_bos else []
            after = [self.eos_id] if self.add_eos else []
        return [t for t in before if t is not None], [t for t in after if t is not None]

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def n_vocab(self) -> int:
        return len(self.vocab)

    def encode(self, text: str, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Token ids of text; add_special adds BOS/EOS as the file asks, parse_special reads control tokens."""
        ids = list(self._prefix) if add_special else []
        space_prefix = self.model == "llama" and self.add_space_prefix
        after_special = True
        for fragment in self._splitter.split(text, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
                after_special = True
                continue
            if space_prefix and after_special:
                fragment = " " + fragment  # SentencePiece's dummy prefix
            ids.extend(self._model.encode(fragment))
            after_special = False
        if add_special:
            ids.extend(self._suffix)
        return ids

    def decode(self, tokens: Iterable[int], special: bool = True, remove_special: bool = False) -> str:
        """Text of token ids; special shows control tokens, remove_special drops the BOS/EOS encode added."""
        tokens = list(tokens)
        strip_space = self.add_space_prefix
        if remove_special and self.add_bos and tokens[:1] == [self.bos_id]:
            tokens, strip_space = tokens[1:], False
        if remove_special and self.add_eos and tokens[-1:] == [self.eos_id]:
            tokens = tokens[:-1]
        parts = [self._pieces(token, special) for token in tokens]
        if strip_space and parts and parts[0].startswith(b" "):
            parts[0] = parts[0][1:]
        text = b"".join(parts).decode("utf-8", "replace")
        return clean_spaces(text) if self._clean_spaces else text

    def token_bytes(self, token: int, special: bool = True) -> bytes:
        """The bytes one token stands for (a piece of a character, for byte tokens)."""
        return self._pieces(token, special)

    def token_text(self, token: int) -> str:
        """The token as the vocabulary spells it (Ġ for a space in BPE, ▁ in SentencePiece)."""
        return self.vocab.texts[self.vocab.check(token)]

    def is_eog(self, token: int) -> bool:
        """Does this token end generation (EOS, EOT, <|im_end|>, ...)?"""
        return token in self.eog_ids

    def detokenizer(self, special: bool = True, shown: frozenset[int] = frozenset()) -> StreamingDetokenizer:
        """A streaming decoder: feed ids, get text that never splits a UTF-8 character; the special tokens in
        shown come out as text even when special is off."""
        return StreamingDetokenizer(self._pieces, special, shown)


def load_tokenizer(path: str | PathLike) -> Tokenizer:
    """The tokenizer of a model file, read from its header only."""
    from kinetic import open_model  # the formats plugin; imported here to keep `kinetic` import light

    return Tokenizer.from_metadata(open_model(path).metadata)
