"""Reranking, for a file whose pooling type is rank (Qwen3-Reranker, a qwen3 decoder; BERT-style cross-encoders):
each (query, document) pair's prompt runs alone; a decoder's last token's hidden state after the output norm, an
encoder's first ([CLS]), goes through the classification head (an encoder's dense layer cls with tanh first, then
cls.output), then for qwen3 a softmax over the head's outputs, as llama.cpp's build_pooling does; the score is the
first output, as llama-server's send_rerank takes it."""

from __future__ import annotations

from typing import Optional

import numpy as np

from kinetic.engine.embedding import Embedder, pooling_of
from kinetic.engine.session import Session
from kinetic.errors import KineticError

HEAD, HEAD_BIAS = "cls.output.weight", "cls.output.bias"
DENSE, DENSE_BIAS = "cls.weight", "cls.bias"  # a cross-encoder's layer before the head (RoBERTa's, with tanh)
TEMPLATE = "tokenizer.chat_template.rerank"  # a prompt with {query} and {document} in it
SOFTMAX_HEADS = ("qwen3", "qwen3vl")  # whose head's outputs llama.cpp turns into probabilities


def ranks(session: Session) -> bool:
    return pooling_of(session) == "rank"


class Ranker:
    def __init__(self, session: Session):
        model = session.model
        if HEAD not in model.tensors:
            raise KineticError(f"{session.name} ranks (pooling type rank) but has no classification head ({HEAD})")
        self.session, self._states = session, Embedder(session)
        n_embd = int(model.arch_value("embedding_length"))
        self._dense, self._dense_bias = (self._optional(name) for name in (DENSE, DENSE_BIAS))
        self._head = model.to_float32(HEAD).reshape(-1, n_embd)  # [outputs, n_embd]
        self._bias = self._optional(HEAD_BIAS)
        self._softmax = model.architecture in SOFTMAX_HEADS
        self._template: Optional[str] = model.metadata.get(TEMPLATE)

    def _optional(self, name: str) -> Optional[np.ndarray]:
        model = self.session.model
        return model.to_float32(name) if name in model.tensors else None

    def prompt(self, query: str, document: str) -> list[int]:
        """The pair's tokens: the file's rerank template filled in, or llama-server's fallback: BOS, the query,
        EOS, SEP and the document, EOS, each where the vocabulary adds it."""
        tokenizer = self.session.tokenizer
        if self._template is not None:
            text = self._template.replace("{query}", query).replace("{document}", document)
            return tokenizer.encode(text, add_special=False, parse_special=True)
        end = [tokenizer.eos_id if tokenizer.eos_id is not None else tokenizer.sep_id] if tokenizer.add_eos else []
        sep = [tokenizer.sep_id] if tokenizer.add_sep else []
        query_tokens = tokenizer.encode(query, add_special=False, parse_special=False)
        document_tokens = tokenizer.encode(document, add_special=False, parse_special=False)
        start = [tokenizer.bos_id] if tokenizer.add_bos else []
        return start + query_tokens + end + sep + document_tokens + end

    def score(self, tokens: list[int]) -> float:
        """The pair's relevance: the head's first output (a probability for qwen3)."""
        hidden = self._states.embed(tokens, norm=-1)  # [n_embd], the pooled token's
        if self._dense is not None:
            hidden = (self._dense.reshape(len(hidden), -1) @ hidden).astype(np.float32)
            hidden = np.tanh(hidden + self._dense_bias if self._dense_bias is not None else hidden)
        out = (self._head @ hidden).astype(np.float32)
        if self._bias is not None:
            out = out + self._bias
        if self._softmax:
            exp = np.exp(out - out.max())
            out = exp / exp.sum(dtype=np.float32)
        return float(out[0])
