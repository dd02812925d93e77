"""Torque on the CPU: a stack's blocks as the tables kernels/torque.py walks (torque_tables.py), and a pass of a few
rows through them in one parallel call a run of blocks (docs/speed.md, Torque).

Torque runs attention, gated feed-forward, short convolution, Mamba-2 and Gated DeltaNet blocks, and parallel
blocks of them, with float16 caches: every block of llama, qwen2, qwen3, gemma3, lfm2, granitehybrid,
falcon-h1 and the like, the recurrent ones in passes of one row a sequence. A block of another kind (experts),
or one asking for something the fused pass does not do (an output gate, a layer norm, another head size than
the first fused attention's), runs unfused between the fused runs; with a quantized cache, or no block it
takes, Torque.tables gives None and every pass runs unfused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from kinetic_cpu.kernels import torque as fused
from kinetic_cpu.kernels.torque_plan import Step
from kinetic_cpu.torque_tables import FusedRun, Tables, refusal

if TYPE_CHECKING:
    from kinetic_cpu.runner import CpuRunner, _Attending, _Numbers


class Torque:
    """A runner's blocks as fused runs, and the blocks between them that run unfused: run(x, numbers, unfused)
    is the runner's blocks on x's rows. Recurrent blocks are fused in passes of one row a sequence
    (one_row_parts), whose states move on where they are; a longer pass keeps a state for each of its rows
    (kinetic.recurrent), and runs them unfused (parts)."""

    def __init__(self, runner: "CpuRunner", tables: "Tables"):
        self._runner = runner
        whole = tables.plan(runner.stack.residual_scale, runner.context_length)
        self.parts, self.one_row_parts = tables.parts(whole, one_row=False), tables.parts(whole, one_row=True)
        self._ropes = tables.ropes  # the fused blocks' ropes, in the order of their rows' ROPE
        self._visibility = tables.visibility  # (window, causal) of each kind of visibility, likewise
        # the most rows of a pass it runs: beyond, products go to AMX tiles or in parts
        self.most_rows = min(m.step_tokens for m in tables.kept)
        self._kept = tables.kept  # the matrices whose blocks the plans read
        self._room = tables.room(self.most_rows, runner.context_length, runner.threads)
        self._addresses = np.array([array.ctypes.data for array in self._room], np.int64)
        self._convolutions = tables.convolutions
        self._states = tables.states
        phases = max(part.plan.n_phases for part in self.parts + self.one_row_parts if isinstance(part, FusedRun))
        self._taken = np.zeros((phases, runner.threads, 1), np.int64)
        self._finished = np.zeros((phases, 1), np.int64)

    @staticmethod
    def takes_a_block(runner: "CpuRunner") -> bool:
        """Whether the runner's cache is one it takes and a block of its stack is one it runs (what tables gives
        tables for), found without laying out any matrix."""
        return runner.cache_types == ("f16", "f16") and any(refusal(block, None, None) is None
                                                            for block in runner.stack.blocks)

    @staticmethod
    def tables(runner: "CpuRunner") -> Optional[Tables]:
        """The runner's blocks as Torque's tables (nothing compiled yet), or None where the cache is quantized or
        no block is one the fused pass runs."""
        if runner.cache_types != ("f16", "f16"):
            return None
        tables = Tables(runner)
        for block in runner.stack.blocks:
            tables.add(block)
        return tables if tables.kept else None

    def run(self, x: np.ndarray, numbers: "_Numbers", unfused: Callable) -> np.ndarray:  # x: [n, n_embd] float32
        """x's rows through every block, their caches written as the unfused pass writes them: each fused run in
        one call, each other block by unfused(block, x)."""
        attending = numbers.attending
        step = self._step(attending)
        one_row = all(span.stop - span.start == 1 for _, span in attending.spans)
        for part in self.one_row_parts if one_row else self.parts:
            if not isinstance(part, FusedRun):
                x = unfused(part, x)
                continue
            x = fused.run_pass(part.plan, step, self._addresses, self._taken, self._finished, x, self._runner.threads)
            numbers.attentions += part.attentions
            numbers.rows += part.convolutions
            numbers.states += len(part.states)
            for layer in part.states:  # what the unfused scan keeps, the states moved on where they are
                for seq, span in attending.spans:
                    seq.recurrent.scan(layer, 1, int(attending.positions[span.start]), None)
        return x

    def _step(self, attending: "_Attending") -> Step:
        """The pass's rows as the fused blocks read them."""
        n, n_caches = len(attending.positions), len(attending.spans)
        angles = [self._runner.angles(rope, attending) for rope in self._ropes]
        visible = [attending.visible(window, causal) for window, causal in self._visibility]
        conv_rows = np.array([[rows.ctypes.data for rows in seq.conv_rows] for seq, _ in attending.spans], np.int64)
        states = np.array([[state.ctypes.data for state in seq.recurrent.current] if seq.recurrent is not None else []
                           for seq, _ in attending.spans], np.int64)
        return Step(attending.positions, attending.cache_of_row, attending.addresses,
                    _stacked([firsts for firsts, _ in visible], (n,), np.int64),
                    _stacked([lasts for _, lasts in visible], (n,), np.int64),
                    _stacked([cos for cos, _ in angles], (n, 1), np.float64),
                    _stacked([sin for _, sin in angles], (n, 1), np.float64),
                    _by_layer(conv_rows, self._convolutions, n_caches), _by_layer(states, self._states, n_caches))


def _by_layer(addresses: np.ndarray, layers: int, caches: int) -> np.ndarray:  # addresses: [caches, layers] int64
    """[layers, caches] int64, C-contiguous as the compiled pass takes it (a transpose alone is not, and the
    code called by address reads it as if it were)."""
    return np.ascontiguousarray(addresses.T.reshape(layers, caches))


def _stacked(arrays: list[np.ndarray], shape: tuple, dtype) -> np.ndarray:
    """The arrays stacked, or none of that shape where there are none (a stack whose attention runs unfused)."""
    return np.stack(arrays) if arrays else np.zeros((0, *shape), dtype)
