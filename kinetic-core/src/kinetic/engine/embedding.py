"""Embeddings: a text's hidden states after the output norm, pooled as the model file says
(`<arch>.pooling_type`, llama.cpp's enum: 0 none, 1 mean, 2 cls, 3 last, 4 rank) and normalised as llama.cpp's
common_embd_normalize does. Each text runs alone on a sequence of its own, so its vector does not depend on the
others of its request. An encoder's text (bidirectional attention) runs in one pass, within its position
embedding's rows."""

from __future__ import annotations

import math
import threading
from typing import Optional, Sequence

import numpy as np

from kinetic.contracts.device import Row
from kinetic.engine.generate import check_prompt, prompt_batches
from kinetic.engine.session import Session
from kinetic.errors import KineticError

POOLING = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}  # rank: a reranker's (kinetic.engine.ranking)
PROJECTIONS = ("dense_2.weight", "dense_3.weight")  # in order, after pooling (llama.cpp: build_dense_out)
EUCLIDEAN = 2  # llama.cpp's embd_normalize: -1 none, 0 max absolute (int16 scale), 1 taxicab, 2 euclidean, >2 p-norm


def pooling_of(session: Session) -> Optional[str]:
    """How the file pools its embeddings, or None when it sets no pooling type (a text model). An encoder that
    sets none gives each token's vector, as llama.cpp does."""
    value = session.model.arch_value("pooling_type", None)
    if value is None:
        return None if session.stack.causal else "none"
    return POOLING.get(int(value), f"type {int(value)}")


def normalized(vector: np.ndarray, norm: int = EUCLIDEAN) -> np.ndarray:  # vector: [n_embd] float32
    """vector scaled as common_embd_normalize scales it: sums in float64, one float32 factor."""
    x = vector.astype(np.float64)
    if norm < 0:
        return vector.copy()
    if norm == 0:
        total = np.abs(x).max() / 32760.0
    elif norm == 1:
        total = np.abs(x).sum()
    else:
        total = (np.abs(x) ** norm).sum() ** (1.0 / norm)
    factor = np.float32(1.0 / total if total > 0 else 0.0)
    return (vector * factor).astype(np.float32)


class Embedder:
    """The embeddings of a session's model: texts take turns on one sequence. default_pooling: for a file that
    sets none (llama-cpp-python's Llama(embedding=True) on a text model gives each token's vector)."""

    def __init__(self, session: Session, default_pooling: Optional[str] = None):
        pooling = pooling_of(session) or default_pooling
        if pooling not in POOLING.values():
            raise KineticError(f"{session.name} pools its embeddings by {pooling}, which Kinetic does not know; "
                               "llama.cpp's pooling types are 0 to 4")
        self.session, self.pooling = session, pooling
        self.n_embd = int(session.model.arch_value("embedding_length"))
        # the pooled vector's projections where the file has them (EmbeddingGemma's), each [out, in] float32
        self._projections = [session.model.to_float32(name) for name in PROJECTIONS if name in session.model.tensors]
        self._seq = session.new_sequence()
        self._turn = threading.Lock()
        self._causal = session.stack.causal  # else its text runs in one pass, and ranks by its first token
        positions = session.stack.position_embedding
        self._longest = min(session.context_length, positions.shape[0] if positions is not None else math.inf)

    def embed(self, tokens: Sequence[int], norm: int = EUCLIDEAN) -> np.ndarray:
        """The text's vector [n_embd] float32, normalised by norm; with pooling none, each token's, [n, n_embd]
        and not normalised, as llama-server gives them."""
        check_prompt(tokens, self.session.tokenizer.n_vocab, self._longest + 1)
        states = self._hidden_states(tokens)
        if self.pooling == "none":
            return self._projected(states)
        pooled = {"mean": lambda: states.mean(axis=0, dtype=np.float32), "cls": lambda: states[0],
                  "last": lambda: states[-1], "rank": lambda: states[-1] if self._causal else states[0]}[self.pooling]()
        return normalized(self._projected(pooled), norm)

    def _projected(self, x: np.ndarray) -> np.ndarray:  # x: [..., n_embd] float32
        for matrix in self._projections:
            x = (x @ matrix.T).astype(np.float32)
        return x

    def _hidden_states(self, tokens: Sequence[int]) -> np.ndarray:
        """[len(tokens), n_embd] float32: each token's hidden state after the output norm."""
        with self._turn:
            seq = self._seq
            seq.truncate(0)
            batches = prompt_batches(0, len(tokens)) if self._causal else [(0, len(tokens))]
            for start, stop in batches:
                self.session.runner.forward([Row(seq, int(tokens[p]), p, parent=i - 1, hidden=True)
                                             for i, p in enumerate(range(start, stop))])
            states = np.stack([seq.hidden.pop(p) for p in range(len(tokens))])
            seq.truncate(0)
        return states
