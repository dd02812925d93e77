"""Tokenizers read from GGUF metadata: byte-level BPE, SentencePiece and WordPiece, as llama.cpp runs them."""

from kinetic.tokenizer.detokenizer import StreamingDetokenizer
from kinetic.tokenizer.pretokenizers import SUPPORTED_PRE_TOKENIZERS
from kinetic.tokenizer.special_ids import SpecialTokens
from kinetic.tokenizer.tokenizer import Tokenizer, load_tokenizer
from kinetic.tokenizer.vocab import TokenAttr, TokenType

__all__ = [
    "SUPPORTED_PRE_TOKENIZERS",
    "SpecialTokens",
    "StreamingDetokenizer",
    "TokenAttr",
    "TokenType",
    "Tokenizer",
    "load_tokenizer",
]
