"""The tokens still in the running while the sampler chain works, always in ascending token id order.

Keeping ascending id order everywhere fixes the floating-point order of every sum (the
softmax's, the pick's cumulative one), so the same logits give the same bits every time.
Where a sampler needs the tokens by likelihood, `best` orders them by descending logit
with ties to the lower id; llama.cpp's partial sorts leave the order of ties unspecified.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from kinetic.errors import KineticError


@dataclasses.dataclass(frozen=True)
class Candidates:
    """Token ids and their (adjusted) logits; a dropped token is simply absent."""

    ids: np.ndarray  # [m] int64, ascending
    logits: np.ndarray  # [m] float64

    @classmethod
    def from_scores(cls, scores: np.ndarray) -> Candidates:
        """Every token whose score is above -inf."""
        # scores: [n_vocab] float64
        alive = scores > -np.inf
        if alive.all():  # the usual case: no copies
            return cls(_all_ids(scores.size), scores)
        ids = np.flatnonzero(alive)
        if ids.size == 0:
            raise KineticError("every token is banned (by logit bias or -inf logits), so none can be sampled")
        return cls(ids, scores[ids])

    def __len__(self) -> int:
        return int(self.ids.size)

    def keep(self, which: np.ndarray) -> Candidates:
        """The candidates a mask or ascending positions select."""
        # which: [m] bool, or [k] int ascending positions
        return Candidates(self.ids[which], self.logits[which])

    def scaled(self, temp: float) -> Candidates:
        """The same tokens with logits divided by the temperature."""
        return Candidates(self.ids, self.logits / temp)

    def softmax(self, temp: float = 1.0) -> np.ndarray:
        """Probabilities of logits / temp, in float64: subtract the max, exp, one numpy sum in id order, divide."""
        scaled = self.logits / temp
        weights = np.exp(scaled - scaled.max())
        return weights / weights.sum()  # [m] float64

    def best(self, count: int) -> np.ndarray:
        """Positions of the `count` likeliest candidates, by descending logit, ties to the lower id."""
        total = len(self)
        count = min(count, total)
        if count < total:
            kth = np.partition(self.logits, total - count)[total - count]  # the count-th largest logit
            chosen = self.logits > kth
            tied = np.flatnonzero(self.logits == kth)
            chosen[tied[: count - np.count_nonzero(chosen)]] = True
            positions = np.flatnonzero(chosen)
        else:
            positions = np.arange(total)
        # a stable sort of ascending positions breaks ties to the lower id
        return positions[np.argsort(-self.logits[positions], kind="stable")]  # [count] int64

    def argmax(self) -> int:
        """Position of the likeliest candidate, ties to the lower id."""
        return int(np.argmax(self.logits))

    def scatter(self, probs: np.ndarray, n_vocab: int) -> np.ndarray:
        """The candidates' probabilities over the whole vocabulary, zero for dropped tokens."""
        # probs: [m] float64
        dense = np.zeros(n_vocab, dtype=np.float64)
        dense[self.ids] = probs
        return dense  # [n_vocab] float64


@functools.lru_cache(maxsize=4)
def _all_ids(n_vocab: int) -> np.ndarray:
    ids = np.arange(n_vocab)
    ids.flags.writeable = False
    return ids  # [n_vocab] int64
