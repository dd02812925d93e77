"""The samplers of llama.cpp's default chain, with the semantics of its src/llama-sampler.cpp.

Logit bias and penalties change the scores of the whole vocabulary in place; the filters
take Candidates and return the ones that survive. DRY lives in dry.py, Mirostat in mirostat.py.
All arithmetic is float64.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from kinetic.sampling.candidates import Candidates

# top-p first sorts only this many best tokens, and eight times more while they fall short (llama.cpp starts so too)
TOP_P_FIRST_LOOK = 256


def recent_tokens(history: Sequence[int] | np.ndarray, last_n: int) -> np.ndarray:
    """The last `last_n` tokens of the history, all of it when last_n < 0, none when it is 0."""
    if last_n == 0:
        return np.zeros(0, dtype=np.int64)
    window = history if last_n < 0 else history[-last_n:]
    return np.asarray(window, dtype=np.int64)  # [min(last_n, len(history))] int64


def apply_logit_bias(scores: np.ndarray, logit_bias: Mapping[int, float]) -> None:
    """Add each bias to its token's score; -inf bans the token. Ids outside the vocabulary are ignored."""
    # scores: [n_vocab] float64, changed in place
    if not logit_bias:
        return
    ids = np.fromiter(logit_bias.keys(), dtype=np.int64, count=len(logit_bias))
    biases = np.fromiter(logit_bias.values(), dtype=np.float64, count=len(logit_bias))
    inside = (ids >= 0) & (ids < scores.size)
    scores[ids[inside]] += biases[inside]


def penalties_off(repeat: float, frequency: float, presence: float) -> bool:
    """Whether these repeat, frequency and presence penalties change no score."""
    return repeat == 1.0 and frequency == 0.0 and presence == 0.0


def apply_penalties(
    scores: np.ndarray, history: Sequence[int], repeat: float, frequency: float, presence: float, last_n: int
) -> None:
    """Repeat, frequency and presence penalties for every token seen in the last `last_n` tokens."""
    # scores: [n_vocab] float64, changed in place
    if penalties_off(repeat, frequency, presence):
        return
    ids, counts = np.unique(recent_tokens(history, last_n), return_counts=True)
    inside = (ids >= 0) & (ids < scores.size)
    ids, counts = ids[inside], counts[inside]
    seen = scores[ids]
    # llama.cpp multiplies a negative logit instead of dividing it, which would make the token likelier
    seen = np.where(seen <= 0.0, seen * repeat, seen / repeat)
    scores[ids] = seen - (counts * frequency + presence)


def top_n_sigma(candidates: Candidates, n: float) -> Candidates:
    """Keep logits within n population standard deviations of the best (Tang et al. 2024, arXiv:2411.07641)."""
    if n <= 0.0 or len(candidates) <= 1:
        return candidates
    logits = candidates.logits
    return candidates.keep(logits >= logits.max() - n * logits.std())


def top_k(candidates: Candidates, k: int) -> Candidates:
    """Keep the k likeliest, ties to the lower id; k <= 0 keeps all."""
    if k <= 0 or k >= len(candidates):
        return candidates
    return candidates.keep(np.sort(candidates.best(k)))


def typical(candidates: Candidates, p: float) -> Candidates:
    """Locally typical sampling (Meister et al. 2022, arXiv:2202.00666): the tokens whose surprise is
    closest to the entropy, until their probability passes p."""
    if p >= 1.0:
        return candidates
    probs = candidates.softmax()
    possible = probs > 0.0
    entropy = -np.sum(probs[possible] * np.log(probs[possible]))
    by_logit = candidates.best(len(candidates))
    with np.errstate(divide="ignore"):
        distance = np.abs(-np.log(probs[by_logit]) - entropy)
    by_typicality = by_logit[np.argsort(distance, kind="stable")]
    # llama.cpp stops at the first token whose running sum is strictly above p
    return _keep_prefix(candidates, by_typicality, np.cumsum(probs[by_typicality]), p, side="right")


def top_p(candidates: Candidates, p: float) -> Candidates:
    """Nucleus sampling (Holtzman et al. 2019): the likeliest tokens until their probability reaches p."""
    if p >= 1.0:
        return candidates
    probs = candidates.softmax()
    look = TOP_P_FIRST_LOOK
    while True:
        order = candidates.best(look)
        running = np.cumsum(probs[order])
        if running[-1] >= p or order.size == len(candidates):
            return _keep_prefix(candidates, order, running, p, side="left")
        look *= 8


def _keep_prefix(candidates: Candidates, order: np.ndarray, running: np.ndarray, p: float, side: str) -> Candidates:
    """Keep order[:j + 1] for the first j where running[j] reaches p (>= for side left, > for right), else all."""
    # order: [k] int positions; running: [k] float64 non-decreasing
    reach = int(np.searchsorted(running, p, side=side))
    if reach >= running.size:
        return candidates
    return candidates.keep(np.sort(order[: reach + 1]))


def min_p(candidates: Candidates, p: float) -> Candidates:
    """Keep tokens at least p times as likely as the best, compared in logit space as llama.cpp does."""
    if p <= 0.0:
        return candidates
    keep = candidates.logits >= candidates.logits.max() + np.log(p)
    keep[candidates.argmax()] = True  # llama.cpp keeps the best token even for p > 1
    return candidates.keep(keep)


def xtc(candidates: Candidates, probability: float, threshold: float, coin: Callable[[], float]) -> Candidates:
    """Exclude Top Choices: with the given chance, drop every token at least `threshold` likely
    but the least likely of them. coin() is this token's uniform, drawn only when it matters."""
    if probability <= 0.0 or threshold > 0.5 or len(candidates) < 2 or coin() > probability:
        return candidates
    probs = candidates.softmax()
    above = int(np.count_nonzero(probs >= threshold))
    if above < 2:
        return candidates
    keep = np.ones(len(candidates), dtype=bool)
    keep[candidates.best(above)[: above - 1]] = False
    return candidates.keep(keep)
