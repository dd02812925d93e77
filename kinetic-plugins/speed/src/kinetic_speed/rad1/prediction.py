"""Drafts from the model's own prediction block (Stack.prediction: Qwen3.5's multi-token prediction), as
llama.cpp's draft-mtp makes them (common/speculative.cpp): the block reads the main model's hidden state after
its output norm at position p - 1 with the token at p and predicts the token at p + 1; a draft goes on from the
block's own hidden state. The block keeps its own cache of every such pair the sequence holds, filled as the
answer goes on."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from kinetic.contracts.device import DeviceSequence, Row, Runner
from kinetic.engine.generate import prompt_batches


class PredictionSource:
    name = "prediction"

    def __init__(self, runner: Runner):
        self.runner = runner  # of the prediction block (Runner.predictor)
        self.zeros = np.zeros(runner.stack.n_embd, np.float32)  # the hidden state before the first, as llama.cpp's
        self.target: Optional[DeviceSequence] = None
        self.seq = runner.new_sequence()
        self.paired: list[int] = []  # the tokens of the pairs its cache holds, by position

    def begin(self, context: Sequence[int], sequence: DeviceSequence) -> None:
        self.target = sequence

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        """history's last token is at position len(history) - 1, the target holding the ones before it."""
        at = len(history) - 1
        self._pair(history[:at])
        draft, token, vector = [], history[at], self._hidden(at - 1)
        for position in range(at, at + limit):
            row = Row(self.seq, token, position, logits=True, top=1, hidden=True, vector=vector)  # argmax reads one
            token = int(np.argmax(self.runner.forward([row])[0]))
            draft.append(token)
            vector = self.seq.hidden[position]
        self.seq.truncate(at)  # the draft's pairs leave the cache: the answer's own come next
        return draft

    def _pair(self, held: Sequence[int]) -> None:
        """The cache holds the pairs of held's tokens: those past what it shares with them run now."""
        common = next((i for i, (a, b) in enumerate(zip(self.paired, held)) if a != b),
                      min(len(self.paired), len(held)))
        self.seq.truncate(common)
        del self.paired[common:]
        for start, stop in prompt_batches(common, len(held)):
            self.runner.forward([Row(self.seq, held[p], p, parent=i - 1, vector=self._hidden(p - 1))
                                 for i, p in enumerate(range(start, stop))])
        self.paired += held[common:]

    def _hidden(self, position: int) -> np.ndarray:
        """The target's hidden state at position; zeros where it has none (before the first, or restored)."""
        return self.target.hidden.get(position, self.zeros)
