"""One sequence of the reference executor: its positions and, per attention block, keys and values; per
short convolution, its inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence as Seq

import numpy as np

from kinetic.contracts.device import Row


@dataclass
class KvCache:
    """One attention block's keys and values, one row per token of the sequence, in arrival order."""

    keys: Optional[np.ndarray] = None  # [m, n_head_kv, head_dim] float32
    values: Optional[np.ndarray] = None

    def append(self, k: np.ndarray, v: np.ndarray) -> None:
        # k, v: [n, n_head_kv, head_dim] float32
        self.keys = k if self.keys is None else np.concatenate([self.keys, k])
        self.values = v if self.values is None else np.concatenate([self.values, v])

    def truncate(self, n: int) -> None:
        if self.keys is not None:
            self.keys, self.values = self.keys[:n], self.values[:n]


@dataclass
class Rows:
    """One block's rows kept per token of the sequence, in arrival order (a short convolution's inputs)."""

    rows: Optional[np.ndarray] = None  # [m, width] float32

    def append(self, x: np.ndarray) -> None:
        self.rows = x if self.rows is None else np.concatenate([self.rows, x])

    def truncate(self, n: int) -> None:
        if self.rows is not None:
            self.rows = self.rows[:n]


@dataclass(eq=False)
class Sequence:
    """One conversation's state; a Row of a forward pass appends to it."""

    runner: Any  # the ReferenceRunner it belongs to
    positions: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # [m] of cached tokens
    caches: dict[int, KvCache] = field(default_factory=dict)  # by block index in the stack
    kept_rows: dict[int, Rows] = field(default_factory=dict)  # likewise
    kept_states: dict[int, list[np.ndarray]] = field(default_factory=dict)  # likewise: the state after each token
    hidden: dict[int, np.ndarray] = field(default_factory=dict)  # position -> hidden state (Row.hidden)

    @property
    def n_tokens(self) -> int:
        """Tokens held in its cache."""
        return len(self.positions)

    def cache(self, block_index: int) -> KvCache:
        return self.caches.setdefault(block_index, KvCache())

    def rows(self, block_index: int) -> Rows:
        return self.kept_rows.setdefault(block_index, Rows())

    def states(self, block_index: int) -> list[np.ndarray]:
        return self.kept_states.setdefault(block_index, [])

    def truncate(self, n: int) -> None:
        """Back to the first n tokens."""
        if not 0 <= n <= self.n_tokens:
            raise ValueError(f"cannot truncate a sequence of {self.n_tokens} tokens to {n}")
        self.positions = self.positions[:n]
        for kept in (*self.caches.values(), *self.kept_rows.values()):
            kept.truncate(n)
        for states in self.kept_states.values():
            del states[n:]
        self.hidden = {p: h for p, h in self.hidden.items() if p < n}  # a small test's sequence: a few rows

    def forward(self, tokens: Seq[int], positions: Optional[Seq[int]] = None) -> np.ndarray:
        """Logits [len(tokens), n_vocab] float32 for tokens at positions (by default, right after the last)."""
        if positions is None:
            positions = range(self.n_tokens, self.n_tokens + len(tokens))
        rows = [Row(self, int(t), int(p), parent=i - 1, logits=True)
                for i, (t, p) in enumerate(zip(tokens, positions, strict=True))]
        return self.runner.forward(rows)
