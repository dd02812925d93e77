"""One generation's place in its grammar: the tokens allowed next as a mask over the logits, and the move
past each token picked. The decoding loop picks row j's token only after accepting the tokens before it, so
a drafted token is judged by the mask of its own position and drafting changes nothing
(docs/exactness.md, section 5)."""

from __future__ import annotations

import functools
from typing import Optional

import llguidance
import llguidance.numpy as llnp
import numpy as np

from kinetic.constraints.grammar import Grammar, GrammarError
from kinetic.errors import KineticError
from kinetic.tokenizer import Tokenizer
from kinetic.tokenizer.vocab import TokenAttr

# Never text: control tokens (<|im_end|>, <eos>), unknown, unused and undefined ones. User-defined tokens
# stay text (Gemma's "\n" is one).
NOT_TEXT = TokenAttr.CONTROL | TokenAttr.UNKNOWN | TokenAttr.UNUSED


class Matcher:
    def __init__(self, grammar: Grammar, tokenizer: Tokenizer):
        self._matcher = llguidance.LLMatcher(grammar_tokenizer(tokenizer), grammar.definition)
        if self._matcher.is_error():
            raise GrammarError(f"the {grammar.kind} cannot be used: {self._matcher.get_error()}")
        self._bits = llnp.allocate_token_bitmask(1, tokenizer.n_vocab)
        self._n_vocab = tokenizer.n_vocab

    def mask(self, logits: np.ndarray) -> np.ndarray:
        """logits ([n_vocab] float32) with -inf for every token the grammar does not allow next; once it is
        complete, only the end-of-generation tokens are allowed."""
        llnp.fill_next_token_bitmask(self._matcher, self._bits)
        allowed = np.zeros(len(logits), bool)
        allowed[: self._n_vocab] = np.unpackbits(self._bits.view(np.uint8), bitorder="little")[: self._n_vocab]
        return np.where(allowed, logits, np.float32(-np.inf))

    def accept(self, token: int) -> None:
        """Move past a token picked from masked logits."""
        if not self._matcher.consume_token(token):
            raise KineticError(f"token {token} does not continue the grammar: {self._matcher.get_error()}")


@functools.lru_cache(maxsize=4)
def grammar_tokenizer(tokenizer: Tokenizer) -> llguidance.LLTokenizer:
    """llguidance's view of the vocabulary: each token's bytes, the ids that are never text, and the
    end-of-generation ids it allows once a grammar is complete (the model's EOS first). Built once per model."""
    eog = [tokenizer.eos_id, *sorted(set(tokenizer.eog_ids) - {tokenizer.eos_id})]
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_Vocabulary(tokenizer)), n_vocab=tokenizer.n_vocab,
                                  eos_token=[t for t in eog if t is not None and t >= 0])


class _Vocabulary:
    """What llguidance.TokenizerWrapper reads of a tokenizer."""

    def __init__(self, tokenizer: Tokenizer):
        self.tokens = [tokenizer.token_bytes(i, special=True) for i in range(tokenizer.n_vocab)]
        self.special_token_ids = [i for i, attr in enumerate(tokenizer.vocab.attrs)
                                  if attr & NOT_TEXT or attr == TokenAttr.UNDEFINED]
        self.eos_token_id: Optional[int] = tokenizer.eos_id
        self.bos_token_id: Optional[int] = tokenizer.bos_id
        self._tokenizer = tokenizer

    def __call__(self, text: bytes | str) -> list[int]:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return self._tokenizer.encode(text, add_special=False)
