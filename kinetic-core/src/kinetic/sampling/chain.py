"""The sampler chain and the pick: token i = pick(probabilities(...), uniform(seed, i)).

The chain runs in llama.cpp's default order: logit bias, penalties (repeat, frequency,
presence), DRY, top-n-sigma, top-k, typical, top-p, min-p, XTC, temperature. With Mirostat
it is logit bias, temperature, Mirostat. The result is a distribution over the whole
vocabulary; pick is its inverse CDF over ascending token ids, so a speculative verifier can
compute pick(p_i, u_i) for a drafted token and get exactly the plain answer (docs/exactness.md,
sections 4 and 5). Greedy (temp <= 0) is the likeliest surviving token, ties to the lowest id.

Floating point: logits become float64 before anything else; every softmax subtracts the max,
exponentiates, and sums in ascending id order; pick's running sum is sequential in the same order.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np

from kinetic.sampling.candidates import Candidates
from kinetic.sampling.dry import NO_BREAKERS, DryBreakers, apply_dry
from kinetic.sampling.mirostat import mirostat_v1, mirostat_v2, next_mu
from kinetic.sampling.filters import (apply_logit_bias, apply_penalties, min_p, penalties_off, top_k, top_n_sigma,
                                     top_p, typical, xtc)
from kinetic.sampling.settings import SamplingSettings, resolve_settings, with_fresh_seed
from kinetic.sampling.uniform import PICK_STREAM, XTC_STREAM, uniform

__all__ = [
    "SamplerState",
    "SamplingSettings",
    "draw",
    "exact_top",
    "pick",
    "probabilities",
    "resolve_settings",
    "sample",
    "uniform",
    "with_fresh_seed",
]


@dataclasses.dataclass
class SamplerState:
    """What one sequence's sampler carries from token to token. The sequence owns it; copy it
    (dataclasses.replace) before trying tokens that may be taken back."""

    mirostat_mu: float  # Mirostat's surprise budget; llama.cpp starts it at 2 * tau
    dry_breakers: DryBreakers = NO_BREAKERS  # settings.dry_sequence_breakers as tokens, see dry.resolve_breakers

    @classmethod
    def start(cls, settings: SamplingSettings, dry_breakers: DryBreakers = NO_BREAKERS) -> SamplerState:
        return cls(mirostat_mu=2.0 * settings.mirostat_tau, dry_breakers=dry_breakers)

    def observe(self, token: int, probs: np.ndarray, settings: SamplingSettings) -> None:
        """Account for the chosen token: Mirostat moves mu by the token's surprise."""
        # probs: [n_vocab] float64, the distribution the token was picked from
        if settings.mirostat:
            self.mirostat_mu = next_mu(self.mirostat_mu, probs[token], settings.mirostat_tau, settings.mirostat_eta)


def sample(
    logits: np.ndarray, history: Sequence[int], settings: SamplingSettings, index: int, state: SamplerState
) -> int:
    """The answer's token number `index` (counting from 0); updates state (Mirostat's mu)."""
    # logits: [n_vocab] float32; history: every earlier token of the sequence, prompt included
    if settings.is_greedy and not (settings.mirostat or _may_drop_the_best(settings)):
        return _likeliest(logits, history, settings, state)
    probs = probabilities(logits, history, settings, index, state)
    token = int(np.argmax(probs)) if settings.is_greedy else pick(probs, draw(settings, index, PICK_STREAM))
    state.observe(token, probs, settings)
    return token


def exact_top(settings: SamplingSettings, n_vocab: int) -> int:
    """How many of the largest logits the chain reads (Row.top): every stage after top-k sees only the k it
    keeps, so the other logits may be left at -inf. 0 when every logit counts: logit bias, penalties and DRY can
    raise any token past the others, top-n-sigma and Mirostat read them all, and without top-k so does the
    chain, unless it is greedy with nothing that can drop the likeliest token (1)."""
    if settings.mirostat or _may_change_scores(settings) or settings.top_n_sigma > 0:
        return 0
    if settings.is_greedy and not _may_drop_the_best(settings):
        return 1
    return settings.top_k if 0 < settings.top_k < n_vocab else 0


def _may_drop_the_best(settings: SamplingSettings) -> bool:
    """Whether typical or XTC is on: the only filters that can drop the likeliest token. Top-n-sigma,
    top-k, top-p and min-p always keep it, and break ties to the lower id as argmax does."""
    return settings.typical_p < 1.0 or (settings.xtc_probability > 0.0 and settings.xtc_threshold <= 0.5)


def _may_change_scores(settings: SamplingSettings) -> bool:
    """False when logit bias and every penalty surely leave the scores as they are."""
    return bool(settings.logit_bias) or settings.dry_multiplier != 0.0 or not penalties_off(
        settings.repeat_penalty, settings.frequency_penalty, settings.presence_penalty)


def _likeliest(logits: np.ndarray, history: Sequence[int], settings: SamplingSettings, state: SamplerState) -> int:
    """Greedy without the filters that keep the likeliest token anyway: the chain's answer, without its cost."""
    # logits: [n_vocab] float32
    if not _may_change_scores(settings):
        best = int(np.argmax(logits))  # float32 orders as its float64 copy does, ties to the lower id
        if logits[best] > -np.inf:  # else a NaN (which the chain drops) or every token -inf (its error)
            return best
    scores = np.array(logits, dtype=np.float64)
    apply_logit_bias(scores, settings.logit_bias)
    _penalize(scores, history, settings, state.dry_breakers)
    candidates = Candidates.from_scores(scores)
    return int(candidates.ids[candidates.argmax()])


def probabilities(
    logits: np.ndarray, history: Sequence[int], settings: SamplingSettings, index: int, state: SamplerState
) -> np.ndarray:
    """The distribution after the sampler chain, zero for every dropped token. `index` is needed
    because XTC's coin for token i is uniform(seed, i, XTC_STREAM)."""
    # logits: [n_vocab] float32 or float64
    scores = np.array(logits, dtype=np.float64)
    apply_logit_bias(scores, settings.logit_bias)
    if settings.mirostat:
        return _mirostat_chain(Candidates.from_scores(scores), settings, state.mirostat_mu, scores.size)
    _penalize(scores, history, settings, state.dry_breakers)
    candidates = _filters(Candidates.from_scores(scores), settings, index)
    if settings.is_greedy:
        return _one_hot(candidates, scores.size)
    return candidates.scatter(candidates.softmax(settings.temp), scores.size)  # [n_vocab] float64


def _penalize(scores: np.ndarray, history: Sequence[int], settings: SamplingSettings, breakers: DryBreakers) -> None:
    """Repeat, frequency and presence penalties, then DRY."""
    # scores: [n_vocab] float64, changed in place
    apply_penalties(
        scores,
        history,
        settings.repeat_penalty,
        settings.frequency_penalty,
        settings.presence_penalty,
        settings.repeat_last_n,
    )
    apply_dry(
        scores,
        history,
        settings.dry_multiplier,
        settings.dry_base,
        settings.dry_allowed_length,
        settings.dry_penalty_last_n,
        breakers,
    )


def _filters(candidates: Candidates, settings: SamplingSettings, index: int) -> Candidates:
    candidates = top_n_sigma(candidates, settings.top_n_sigma)
    candidates = top_k(candidates, settings.top_k)
    candidates = typical(candidates, settings.typical_p)
    candidates = top_p(candidates, settings.top_p)
    candidates = min_p(candidates, settings.min_p)
    coin = functools.partial(draw, settings, index, XTC_STREAM)
    return xtc(candidates, settings.xtc_probability, settings.xtc_threshold, coin)


def _mirostat_chain(candidates: Candidates, settings: SamplingSettings, mu: float, n_vocab: int) -> np.ndarray:
    """Temperature, then Mirostat in place of every other sampler."""
    if settings.is_greedy:
        return _one_hot(candidates, n_vocab)
    scaled = candidates.scaled(settings.temp)
    kept = mirostat_v1(scaled, mu, n_vocab) if settings.mirostat == 1 else mirostat_v2(scaled, mu)
    return kept.scatter(kept.softmax(), n_vocab)  # [n_vocab] float64


def _one_hot(candidates: Candidates, n_vocab: int) -> np.ndarray:
    probs = np.zeros(n_vocab, dtype=np.float64)
    probs[candidates.ids[candidates.argmax()]] = 1.0
    return probs  # [n_vocab] float64


def pick(probs: np.ndarray, u: float) -> int:
    """Inverse CDF over ascending token ids: the first token whose running sum passes u * total."""
    # probs: [n_vocab] float64, zero for dropped tokens; u: in [0, 1)
    support = np.flatnonzero(probs > 0.0)
    if support.size == 0:
        raise ValueError("pick needs a distribution with at least one token of positive probability")
    running = np.cumsum(probs[support])  # skipping the zeros leaves every partial sum unchanged
    at = int(np.searchsorted(running, u * running[-1], side="right"))
    return int(support[min(at, support.size - 1)])


def draw(settings: SamplingSettings, index: int, stream: int) -> float:
    """The uniform of generated token `index` on `stream`, under the settings' seed."""
    if not settings.has_seed:
        raise ValueError("sampling needs a concrete seed: pass the settings through with_fresh_seed first")
    return uniform(settings.seed, index, stream)
