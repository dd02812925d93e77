"""A sequence's recurrent states (contracts.blocks.Mamba2, GatedDeltaNet), kept so that it truncates exactly;
for every device, in numpy or CuPy arrays (docs/recurrent.md). A layer's state is its scan's and its causal
convolution's last width - 1 input rows (its tail), in one buffer.

Each layer's state is held after the sequence's last token. A pass keeps the states it started from and, while
they take little memory, those after each of its rows (RAD-1 rolls a draft back to one of them); every
`interval` tokens (snapshot_interval) the states are kept for good (a start to come back to, saved with the
sequence). A cut anywhere else goes back to the last kept states before it and computes the tokens after them
again, which by batch invariance gives the same bits (docs/exactness.md, section 6).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, Callable, Optional

import numpy as np

from kinetic.contracts.blocks import GatedDeltaNet, Mamba2, Mixer, Stack

SNAPSHOT = 256  # the fewest tokens between kept states: a divisor of the prompt grid (engine/generate.py)
MAX_SNAPSHOT = 8192  # the most: a cut computes at most this many tokens again
KEEP_BYTES = 64 << 20  # a pass keeps the states after each of its rows while they fit in this many bytes

RECURRENT = (Mamba2, GatedDeltaNet)  # the mixers that carry a state from token to token
States = list[Optional[Any]]  # one float32 buffer per recurrent layer (state_shape, tail_shape), numpy or CuPy
Step = Callable[[slice, Any, Any], Any]  # (rows, state in, state out) -> the rows' outputs


def state_shape(block: Mixer) -> tuple[int, int, int]:
    """Mamba-2's [n_head, d_state, head_dim]; Gated DeltaNet's [n_v_head, head_dim (k), head_dim (v)]: per head,
    the contracts' S_h transposed, the dimension each output's sum runs over first (docs/recurrent.md)."""
    if isinstance(block, Mamba2):
        return block.n_head, block.d_state, block.out_proj.shape[1] // block.n_head
    return block.n_v_head, block.head_dim, block.head_dim


def tail_shape(block: Mixer) -> tuple[int, int]:
    """The convolution input rows a recurrent layer keeps: [width - 1, channels]."""
    return block.conv.shape[1] - 1, block.conv.shape[0]


def snapshot_interval(state_bytes: int, token_bytes: int) -> int:
    """Tokens between kept states: SNAPSHOT, doubled (up to MAX_SNAPSHOT) while one snapshot holds more bytes
    than the sequence's caches hold for the tokens between two, so that snapshots at most double a sequence's
    memory; each interval is a divisor or a multiple of the prompt grid."""
    interval = SNAPSHOT
    while state_bytes > interval * token_bytes and interval < MAX_SNAPSHOT:
        interval *= 2
    return interval


def has_recurrent(stack: Stack) -> bool:
    return any(isinstance(b, RECURRENT) for b in stack.mixers())


class RecurrentStates:
    """token_bytes: what the device's caches hold per token (for snapshot_interval); xp: the array module states
    live in (numpy, or cupy on the GPU); host: one of its arrays as numpy; in_place: one-row passes update the
    states where they are (the CPU's: a state read and written in the same memory moves a third fewer bytes
    than one written elsewhere), so a cut back past such a row computes again from kept states."""

    def __init__(self, stack: Stack, context_length: int, token_bytes: int, xp: ModuleType = np,
                 host: Callable = np.asarray, in_place: bool = False):
        self.xp, self.host, self.in_place = xp, host, in_place
        self._shapes = [(state_shape(b), tail_shape(b)) for b in stack.mixers() if isinstance(b, RECURRENT)]
        self.current = [xp.zeros(math.prod(scan) + math.prod(tail), xp.float32) for scan, tail in self._shapes]
        self._spare = [xp.empty_like(s) for s in self.current]  # what the next pass writes its states into
        self.state_bytes = sum(s.nbytes for s in self.current)
        self.interval = snapshot_interval(self.state_bytes, token_bytes)
        self.tokens = np.zeros(context_length, np.int64)  # to compute a cut's tokens again
        self.kept: dict[int, States] = {}  # tokens held -> the states after them, every interval tokens
        self.recent: dict[int, States] = {}  # likewise, for the last pass

    def views(self, layer: int, buffer: Any) -> tuple[Any, Any]:
        """A layer's buffer as its scan state [state_shape] and its tail [tail_shape]."""
        scan, tail = self._shapes[layer]
        return buffer[: math.prod(scan)].reshape(scan), buffer[math.prod(scan) :].reshape(tail)

    def tail(self, layer: int) -> Any:
        """The current tail of a layer: the input rows before the next pass's first, [width - 1, channels]."""
        return self.views(layer, self.current[layer])[1]

    def keeping_tails(self, layer: int, window: Any, step: Step) -> Step:
        """step, which runs rows through the scan states (views), as a Step over whole buffers that also keeps
        each row's tail, from the pass's window ([width - 1 + n, channels]: the tail, then the pass's rows)."""
        keep = self._shapes[layer][1][0]

        def whole(rows: slice, state_in: Any, state_out: Any) -> Any:
            (scan_in, _), (scan_out, tail_out) = self.views(layer, state_in), self.views(layer, state_out)
            tail_out[...] = window[rows.stop : rows.stop + keep]
            return step(rows, scan_in, scan_out)

        return whole

    def scan(self, layer: int, n: int, first: int, step: Optional[Step]) -> Any:
        """A pass's n rows at positions first, first + 1, ... through layer's state: step(rows, state_in, state_out)
        runs the rows (a slice) from state_in into state_out and returns their outputs; -> every row's, in order.
        The pass writes into the layer's spare buffer, so the state it started from stays as it was, for a cut
        back to it, without a copy (unless in_place and n is 1). With step None the pass's kernels are queued
        already (a replayed CUDA graph of a pass that keeps no snapshot): only what is kept moves."""
        if layer == 0:
            self.recent = {}
        began = self.current[layer]
        out = began if self.in_place and n == 1 else self._spare[layer]
        if out is not began:
            self._keep(self.recent, first, layer, began)
        each_row = n * self.state_bytes <= KEEP_BYTES
        stops = [i + 1 for i in range(n) if each_row or (first + i + 1) % self.interval == 0]
        outputs, start, source = [], 0, began
        for stop in stops + ([n] if not stops or stops[-1] != n else []):
            if step is not None:
                outputs.append(step(slice(start, stop), source, out))
            held = first + stop
            if each_row:  # the last row's state is the buffer itself, which no later row of the pass changes
                self._keep(self.recent, held, layer, out if stop == n else out.copy())
            if held % self.interval == 0:
                self._keep(self.kept, held, layer, out.copy())
            start, source = stop, out
        if out is not began:
            self.current[layer], self._spare[layer] = out, began
        return outputs[0] if len(outputs) == 1 else self.xp.concatenate(outputs) if outputs else None

    def advance(self, position: int) -> None:
        """What every layer's scan keeps for a one-row pass at position whose kernels are queued already."""
        for layer in range(len(self.current)):
            self.scan(layer, 1, position, None)

    def _keep(self, table: dict[int, States], held: int, layer: int, state: np.ndarray) -> None:
        table.setdefault(held, [None] * len(self.current))[layer] = state

    def rewind(self, n: int) -> int:
        """Go back to the states after n tokens if they are kept, else to the last kept before them; -> the
        tokens the states are now after."""
        for table in (self.recent, self.kept):
            if n in table and all(s is not None for s in table[n]):
                self._restore(table[n], n)
                return n
        held = max((k for k in self.kept if k < n), default=0)
        self._restore(self.kept.get(held), held)
        return held

    def _restore(self, states: Optional[States], held: int) -> None:
        for current, kept in zip(self.current, states or [None] * len(self.current)):
            current[...] = 0 if kept is None else kept
        self.kept = {k: s for k, s in self.kept.items() if k <= held}
        self.recent = {}

    def parts(self, n: int) -> list[bytes]:
        """Its bytes for a saved sequence of n tokens: the tokens, the current states, then each kept snapshot."""
        snapshots = [self.kept[k] for k in range(self.interval, n + 1, self.interval)]
        return [self.tokens[:n].tobytes(), *(self.host(s).tobytes() for s in self.current),
                *(self.host(s).tobytes() for states in snapshots for s in states)]

    def saved_bytes(self, n: int) -> int:
        return 8 * n + self.state_bytes * (1 + n // self.interval)

    def load(self, blob: bytes, at: int, n: int) -> int:
        """parts(n) back from blob at `at`; -> where they end."""
        self.tokens[:n] = np.frombuffer(blob, np.int64, n, at)
        current, at = self._read(blob, at + 8 * n)
        self._restore(current, 0)
        for held in range(self.interval, n + 1, self.interval):
            self.kept[held], at = self._read(blob, at)
        return at

    def _read(self, blob: bytes, at: int) -> tuple[States, int]:
        states = []
        for s in self.current:
            states.append(self.xp.array(np.frombuffer(blob, np.float32, s.size, at)))
            at += s.nbytes
        return states, at


def cut(seq: Any, n: int, replay: Callable[[Any, np.ndarray, int], None]) -> None:
    """Truncate a device sequence (its n_tokens, recurrent states and hidden states) to its first n tokens: back to
    the last kept states at or before n, then replay(seq, tokens, first position) the tokens from there to n again."""
    n = min(seq.n_tokens, max(0, n))
    for position in range(n, seq.n_tokens):
        seq.hidden.pop(position, None)
    if seq.recurrent is not None and n < seq.n_tokens:
        seq.n_tokens = seq.recurrent.rewind(n)
        if seq.n_tokens < n:
            replay(seq, seq.recurrent.tokens[seq.n_tokens : n].copy(), seq.n_tokens)
    seq.n_tokens = n
