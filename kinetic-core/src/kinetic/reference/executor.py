"""The reference executor: runs any Stack in plain numpy, obviously correct and slow.

It has the device contract's shape (docs/architecture.md, section 2): new_sequence(), forward(rows) with the
logits of the rows that ask, seq.truncate(n). Rows of one pass may belong to several sequences and share
every matrix product; a row attends to its own sequence: its cached tokens and this pass's rows of it,
those at positions up to its own.
"""

from __future__ import annotations

from typing import Optional, Sequence as Seq

import numpy as np

from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, Mamba2, Mixer, Parallel,
                                      ShortConv, Stack, Weight)
from kinetic.contracts.device import Row
from kinetic.errors import KineticError
from kinetic.reference import blocks, ops
from kinetic.reference.sequence import Sequence


class ReferenceRunner:
    """A Stack made runnable; each weight is dequantized to float32 once, at first use, and kept."""

    def __init__(self, stack: Stack):
        self.stack = stack
        self._weights: dict[str, np.ndarray] = {}  # by tensor name: every weight of a stack is in one file

    def weight(self, weight: Optional[Weight]) -> Optional[np.ndarray]:
        if weight is None:
            return None
        if weight.key not in self._weights:
            self._weights[weight.key] = weight.to_float32()
        return self._weights[weight.key]

    def new_sequence(self) -> Sequence:
        return Sequence(self)

    def forward(self, rows: Seq[Row]) -> np.ndarray:
        """Run the rows; returns the logits [rows asking, n_vocab] float32 of the rows that ask, in row order."""
        if any(row.sequence.runner is not self for row in rows):
            raise ValueError("a row's sequence belongs to another runner")
        tokens = np.array([row.token for row in rows], dtype=np.int64)
        positions = np.array([row.position for row in rows], dtype=np.int64)
        by_sequence: dict[int, list[int]] = {}
        for i, row in enumerate(rows):
            indices = by_sequence.setdefault(id(row.sequence), [])
            if row.parent != (indices[-1] if indices else -1):
                raise ValueError(f"the reference executor runs linear batches: row {i} follows row {row.parent}, "
                                 "not the row before it of its sequence")
            indices.append(i)
        groups = [(rows[indices[0]].sequence, np.array(indices)) for indices in by_sequence.values()]
        for seq, indices in groups:
            seq.positions = np.concatenate([seq.positions, positions[indices]])
        vectors = np.array([row.vector for row in rows], np.float32) if self.stack.input is not None else None
        hidden = self._run(tokens, positions, groups, vectors)
        keep = [i for i, row in enumerate(rows) if row.hidden]
        for i, normed in zip(keep, self._normed(hidden[keep])):
            rows[i].sequence.hidden[rows[i].position] = normed
        return self._logits(hidden[[i for i, row in enumerate(rows) if row.logits]])

    def _run(self, tokens: np.ndarray, positions: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
             vectors: Optional[np.ndarray]) -> np.ndarray:
        """The residual stream [n, n_embd] float32 after every block; vectors: the rows' (Row.vector)."""
        x = self._inputs(tokens, positions)
        given = self.stack.input
        if given is not None:  # [enorm(e), hnorm(h)] through eh_proj
            halves = [blocks.norm(self.weight, norm, part) for part, norm in ((x, given.enorm), (vectors, given.hnorm))]
            x = ops.linear(np.concatenate(halves, axis=1), self.weight(given.eh_proj))
        residual_scale = np.float32(self.stack.residual_scale)
        numbers = iter(range(len(self.stack.mixers())))  # each mixer's state is kept under its number
        for block in self.stack.blocks:
            if isinstance(block, Parallel):
                h = blocks.norm(self.weight, block.norm, x)
                outs = [self._mixer(m, h, positions, groups, next(numbers)) for m in block.mixers]
                out = outs[0]
                for more in outs[1:]:
                    out = out + more
            else:
                out = self._mixer(block, x, positions, groups, next(numbers))
            x = blocks.norm(self.weight, getattr(block, "residual_norm", None), x + out * residual_scale)
        return x

    def _inputs(self, tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """[n, n_embd] float32: the tokens' embeddings, an encoder's with its token type and position rows and norm."""
        s = self.stack
        x = self.weight(s.embedding)[tokens] * np.float32(s.embedding_scale)
        if s.token_types is not None:
            x = x + self.weight(s.token_types)[0]
        if s.position_embedding is not None:
            x = x + self.weight(s.position_embedding)[positions]
        return blocks.norm(self.weight, s.embedding_norm, x)

    def _mixer(self, block: Mixer, x: np.ndarray, positions: np.ndarray, groups: list[tuple[Sequence, np.ndarray]],
               number: int) -> np.ndarray:
        if isinstance(block, Attention):
            return blocks.attention(self.weight, block, x, positions, groups, number)
        if isinstance(block, GatedFeedForward):
            return blocks.feed_forward(self.weight, block, x)
        if isinstance(block, Experts):
            return blocks.experts(self.weight, block, x)
        if isinstance(block, ShortConv):
            return blocks.short_conv(self.weight, block, x, groups, number)
        if isinstance(block, Mamba2):
            return blocks.mamba2(self.weight, block, x, groups, number)
        if isinstance(block, GatedDeltaNet):
            return blocks.gated_delta_net(self.weight, block, x, groups, number)
        raise KineticError(f"the reference executor has no {type(block).__name__} block")

    def _normed(self, hidden: np.ndarray) -> np.ndarray:
        # hidden: [k, n_embd] float32 -> the output norm's [k, n_embd] float32
        return blocks.norm(self.weight, self.stack.output_norm, hidden)

    def _logits(self, hidden: np.ndarray) -> np.ndarray:
        # hidden: [k, n_embd] float32 -> [k, n_vocab] float32
        logits = ops.linear(self._normed(hidden), self.weight(self.stack.output))
        return logits * np.float32(self.stack.logit_scale)
