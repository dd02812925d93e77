"""Mirostat (Basu et al. 2021, arXiv:2007.14966), versions 1 and 2, as llama.cpp runs them: a cut
tuned token by token so that the surprise of the chosen tokens tracks the target tau. The running
value mu is the caller's state; these functions only read it.
"""

from __future__ import annotations

import numpy as np

from kinetic.sampling.candidates import Candidates
from kinetic.sampling.filters import top_k

ZIPF_SAMPLE = 100  # llama.cpp's m: the likeliest tokens that estimate the Zipf exponent


def mirostat_v1(candidates: Candidates, mu: float, n_vocab: int) -> Candidates:
    """Keep the top k, with k from the Zipf exponent of the likeliest tokens and the budget mu."""
    probs = candidates.softmax()
    top = probs[candidates.best(ZIPF_SAMPLE)]
    rank = np.arange(top.size - 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.log((rank + 2.0) / (rank + 1.0))
        b = np.log(top[:-1] / top[1:])
        s_hat = np.sum(t * b) / np.sum(t * t)
        epsilon = s_hat - 1.0
        k = ((epsilon * 2.0**mu) / (1.0 - float(n_vocab) ** -epsilon)) ** (1.0 / s_hat)
    return top_k(candidates, _as_count(k, len(candidates)))


def _as_count(k: float, total: int) -> int:
    """llama.cpp's max(int(k), 1): NaN and k < 1 give 1, and a k past the candidates keeps them all
    (C's int() of an out-of-range float is undefined; this is what ARM's saturating conversion gives)."""
    if np.isnan(k) or k < 1.0:
        return 1
    return total if k >= total else int(k)


def mirostat_v2(candidates: Candidates, mu: float) -> Candidates:
    """Keep the tokens whose surprise, -log2 p, is at most mu; at least the likeliest one."""
    with np.errstate(divide="ignore"):
        keep = -np.log2(candidates.softmax()) <= mu
    if not keep.any():
        keep[candidates.argmax()] = True
    return candidates.keep(keep)


def next_mu(mu: float, chosen_probability: float, tau: float, eta: float) -> float:
    """mu after choosing a token of that (final) probability: it moves against the surprise's error."""
    return float(mu - eta * (-np.log2(chosen_probability) - tau))
