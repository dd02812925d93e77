"""The RAD-1 drafter: whichever source has lately been right most proposes; the draft's length follows
recent acceptance, and drafts that miss outright pause drafting for longer and longer."""

from __future__ import annotations

from typing import Optional, Sequence

from kinetic.contracts.device import DeviceSequence, Runner
from kinetic_speed.rad1.lookup import ContextSource, TokenLog
from kinetic_speed.rad1.prediction import PredictionSource

FIRST_LENGTH = 3
TILE_ROWS = 16  # passes grow a tile at a time: with AMX, 8 rows cost about what 16 do
MAX_LENGTH = 31  # with the last token, passes of at most two tiles
MAX_PAUSE = 64  # plain passes after a run of outright misses, at most
TRUST_DECAY = 0.8  # weight of a source's earlier record against its latest draft
PREDICTION_TRUST = 0.6  # a model's own prediction block goes first until its record says otherwise


class Rad1Drafter:
    """A Drafter (kinetic.contracts.drafting) for one loaded model; log is shared across its generations, and
    predictor, the runner of the model's prediction block (Runner.predictor) where it has one, too."""

    def __init__(self, log: TokenLog, predictor: Optional[Runner] = None):
        self.log, self.predictor = log, predictor
        self.context = ContextSource()
        self.prediction = PredictionSource(predictor) if predictor is not None else None
        self.sources = [s for s in (self.prediction, self.context, log) if s is not None]
        self.trust = {self.context.name: 0.5, log.name: 0.5}  # recent fraction of guesses kept
        if self.prediction is not None:
            self.trust[self.prediction.name] = PREDICTION_TRUST
        self.reads_hidden = self.prediction is not None
        self.length = FIRST_LENGTH
        self._pause, self._paused = 0, 0
        self._last_source = ""
        self._right, self._checked = 0.5, 1.0  # guesses right and guesses checked, recent drafts weighing most

    def begin(self, context: Sequence[int], sequence: Optional[DeviceSequence]) -> None:
        self.context.begin(context)
        if self.prediction is not None:
            self.prediction.begin(context, sequence)

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        if self._paused > 0:
            self._paused -= 1
            return []
        limit = min(limit, self.length)
        for source in sorted(self.sources, key=lambda s: -self.trust[s.name]):
            draft = source.propose(history, limit)
            if draft:
                self._last_source = source.name
                return draft
        return []

    def feedback(self, proposed: int, accepted: int) -> None:
        self._right = TRUST_DECAY * self._right + accepted
        self._checked = TRUST_DECAY * self._checked + accepted + (accepted < proposed)  # the first wrong one
        self.trust[self._last_source] = TRUST_DECAY * self.trust[self._last_source] + (1 - TRUST_DECAY) * (
            accepted / proposed)
        if accepted == proposed:  # the next pass fills the next whole tile: drafts of 3, 15, 31
            self.length = min(MAX_LENGTH, (self.length + 1) // TILE_ROWS * TILE_ROWS + TILE_ROWS - 1)
        else:
            self.length = max(2, accepted + 1)
        if accepted == 0:
            self._pause = min(MAX_PAUSE, max(1, self._pause * 2))
            self._paused = self._pause
        else:
            self._pause = 0

    def kept(self) -> float:
        return self._right / self._checked

    def end(self, history: Sequence[int]) -> None:
        self.log.record(history)

    def fork(self) -> Rad1Drafter:
        """Its own context, prediction cache and policy; the log of earlier answers is shared."""
        return Rad1Drafter(self.log, self.predictor)
