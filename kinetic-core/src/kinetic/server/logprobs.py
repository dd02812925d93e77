"""Log-probabilities of the model's raw logits, before any sampler, as llama-server reports them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_TOP = 20  # most alternatives a request may ask for


@dataclass(frozen=True)
class TokenLogprobs:
    token: int
    logprob: float
    top: list[tuple[int, float]]  # the likeliest tokens and their log-probabilities, likeliest first


def token_logprobs(logits: np.ndarray, token: int, top: int) -> TokenLogprobs:
    """The chosen token's log-probability and the `top` likeliest (ties to the lower id)."""
    # logits: [n_vocab] float32, raw
    scores = logits.astype(np.float64)
    shifted = scores - scores.max()
    log_total = np.log(np.exp(shifted).sum())
    best: list[tuple[int, float]] = []
    if top > 0:
        ids = np.argpartition(-shifted, top - 1)[:top] if top < shifted.size else np.arange(shifted.size)
        ids = ids[np.lexsort((ids, -shifted[ids]))]  # by descending logit, then ascending id
        best = [(int(i), float(shifted[i] - log_total)) for i in ids]
    return TokenLogprobs(token, float(shifted[token] - log_total), best)
