"""Torque's plans (kinetic_cpu/torque.py): a stack's blocks written down as the tables of numbers
kernels/torque_plan.py describes, a row per fused block, and the parts of the stack (a run of fused rows, or a
block that runs unfused) in block order. Which blocks the fused pass takes: refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Optional

import numpy as np

from kinetic.contracts.blocks import (Attention, GatedDeltaNet, GatedFeedForward, Mamba2, Norm, Parallel, RmsNorm,
                                      ShortConv, Weight)
from kinetic.recurrent import RECURRENT
from kinetic_cpu import ops
from kinetic_cpu.kernels import torque as fused
from kinetic_cpu.kernels import torque_recurrent as recurrent_work
from kinetic_cpu.kernels import torque_work as work
from kinetic_cpu.kernels.activations import _rows_serial
from kinetic_cpu.kernels.attention import KEY_BLOCK
from kinetic_cpu.kernels.driver import KERNELS
from kinetic_cpu.kernels.intrinsics import compile_for, compiled_address
from kinetic_cpu.kernels.matmul import activations
from kinetic_cpu.kernels.torque_plan import (AFTER_ROPE, ATTENTION, ATTEND, BLOCK_FIELDS, CODE, CONV, CONV_BIAS,
                                             CONV_WIDTH, D_INNER, D_STATE, DELTA_NET, FEED_FORWARD, FLOAT, GATE, JOBS,
                                             K_NORM, KIND, L2_NORM, LAYER, M1, M2, M3, M4, M5, MAMBA2, N_GROUP,
                                             N_HEAD, N_KV, NEOX, NORM, OUT_NORM, POST_NORM, PRODUCTS, Q_NORM,
                                             QUANTIZE, RECURRENT_WORK, RESIDUAL, ROOM_FIELDS, ROPE, SCAN, SERIAL,
                                             SHARED, SHORT_CONV, SINKS, SSM, STAGES, SUM_FIRST, SUM_LAST, SUM_NEXT,
                                             SUMS_TO, VISIBLE, WALK, WORK, Plan, Step, room_arrays, ssm_floats)

if TYPE_CHECKING:
    from kinetic_cpu.runner import CpuRunner

_ACTS = {"q8_0": 0, "q8_k": 1, "float": FLOAT}  # torque_plan.py's codes for Matrix.activations


class FusedRun(NamedTuple):
    """Consecutive blocks the fused pass runs in one parallel call."""

    plan: Plan
    attentions: int  # attention blocks among them (each numbers its caches in block order)
    convolutions: int  # short convolution blocks among them (each numbers its kept rows)
    states: tuple[int, ...]  # the states of its recurrent blocks (RecurrentStates' numbers)


def refusal(block, attention: Optional[Attention], activation: Optional[str]) -> Optional[str]:
    """Why the fused pass cannot run the block, or None where it can; attention and activation: the first fused
    attention block's and feed-forward's (a plan has one head size and one gate)."""
    if isinstance(block, Parallel):
        if not isinstance(block.norm, RmsNorm):
            return "a layer norm"
        for mixer in block.mixers:
            reason = refusal(mixer, attention, activation)
            if reason is not None:
                return reason
            attention = mixer if attention is None and isinstance(mixer, Attention) else attention
            activation = _activation(mixer) if isinstance(mixer, (GatedFeedForward, *RECURRENT)) else activation
        return None
    if not isinstance(block, (Attention, GatedFeedForward, ShortConv, *RECURRENT)):
        return "a block other than attention, a gated feed-forward, a short convolution, Mamba-2 and Gated DeltaNet"
    if any(w.type.name not in KERNELS for w in _weights(block)):
        return "a weight type without a product kernel"
    if not all(isinstance(n, RmsNorm) for n in _norms(block) if n is not None):
        return "a layer norm"
    if getattr(block, "residual_norm", None) is not None:
        return "a residual norm"
    if isinstance(block, Attention):
        if block.output_gate:
            return "an output gate"
        if attention is not None and _heads(block) != _heads(attention):
            return "another head size, group or rotation than the first fused attention's"
    if isinstance(block, (GatedFeedForward, *RECURRENT)) and activation not in (None, _activation(block)):
        return "another activation than the first fused feed-forward's (the recurrent blocks': SiLU)"
    return None


def _activation(block) -> str:
    """The activation a fused block's gate jobs take (the plan's GATE)."""
    return "silu" if isinstance(block, RECURRENT) else block.activation


def _mixers(block) -> tuple:
    return block.mixers if isinstance(block, Parallel) else (block,)


def _heads(a: Attention) -> tuple[int, int, int]:
    return a.head_dim, a.n_head // a.n_head_kv, a.rope.n_dims


def _norms(block) -> tuple[Optional[Norm], ...]:
    if isinstance(block, Attention):
        return block.norm, block.q_norm, block.k_norm, block.post_norm
    if isinstance(block, ShortConv):
        return (block.norm,)
    if isinstance(block, RECURRENT):
        return block.norm, block.out_norm
    return block.norm, block.post_norm


def _weights(block) -> tuple[Weight, ...]:
    if isinstance(block, Attention):
        return block.q, block.k, block.v, block.o
    if isinstance(block, (ShortConv, Mamba2)):
        return block.in_proj, block.out_proj
    if isinstance(block, GatedDeltaNet):
        return block.qkv_proj, block.gate_proj, block.beta_proj, block.alpha_proj, block.out_proj
    return (block.gate, block.up, block.down) if block.gate is not None else (block.up, block.down)


class Tables:
    """The plans' tables, a block at a time: the fused blocks' rows, and the parts of the stack (a fused run's
    rows, or a block that runs unfused)."""

    def __init__(self, runner: "CpuRunner"):
        self._runner = runner
        self.blocks: list[list[int]] = []
        self.matrices: list[list[int]] = []
        self.kept = []  # the Matrix of each row of matrices (their blocks stay alive with the plan)
        self.norms: list[list[int]] = []
        self.eps: list[float] = []
        self.floats: list[np.ndarray] = [np.zeros(1, np.float32)]  # never empty
        self.scales: list[float] = []
        self.ropes: list = []
        self.visibility: list[tuple] = []
        self.most_out = 0  # the most outputs of a product phase
        self.convolutions = 0  # short convolution blocks so far, fused or not (their kept rows' numbers)
        self.states = 0  # recurrent blocks so far, fused or not (their states' numbers)
        self._ssm: list[tuple[int, int, int]] = []  # each fused recurrent block's channels, d_inner and width
        self._size = 1  # floats' values so far
        self._attentions: list[Attention] = []  # the fused ones
        self._attention_layers = 0  # attention blocks so far, fused or not (their caches' numbers)
        self._activation: Optional[str] = None  # the fused feed-forwards' and recurrent blocks'
        self._order: list[tuple] = []  # each block in order with its rows (first, end; None: unfused)

    def add(self, block) -> None:
        first = self._attentions[0] if self._attentions else None
        if refusal(block, first, self._activation) is not None:
            self._order.append((None, None, block))
            for mixer in _mixers(block):
                self._attention_layers += isinstance(mixer, Attention)
                self.convolutions += isinstance(mixer, ShortConv)
                self.states += isinstance(mixer, RECURRENT)
            return
        start = len(self.blocks)
        if isinstance(block, Parallel):  # one normed input, the outputs summed
            last = len(block.mixers) - 1
            for i, mixer in enumerate(block.mixers):
                sums_to = RESIDUAL if last == 0 else SUM_FIRST if i == 0 else SUM_LAST if i == last else SUM_NEXT
                self._add_row(mixer, block.norm if i == 0 else None, True, sums_to)
        else:
            self._add_row(block, block.norm, False, RESIDUAL)
        self._order.append((start, len(self.blocks), block))

    def _add_row(self, block, norm: Optional[RmsNorm], shared: bool, sums_to: int) -> None:
        row = [-1] * BLOCK_FIELDS
        row[NORM], row[POST_NORM] = self._norm(norm), self._norm(getattr(block, "post_norm", None))
        row[SHARED], row[SUMS_TO] = int(shared), sums_to
        kind = {ShortConv: self._short_conv, Attention: self._attention, Mamba2: self._mamba2,
                GatedDeltaNet: self._delta_net}
        kind.get(type(block), self._feed_forward)(block, row)
        self.blocks.append(row)

    def _short_conv(self, block: ShortConv, row: list[int]) -> None:
        row[KIND], row[LAYER] = SHORT_CONV, self.convolutions
        row[M2], row[M3] = self._matrix(block.in_proj, None), self._matrix(block.out_proj, None)
        row[CONV], row[CONV_WIDTH] = self._taps(block.conv), block.conv.shape[1]
        self.convolutions += 1
        self.scales.append(0.0)
        self._outputs([row[M2]], [row[M3]])

    def _attention(self, block: Attention, row: list[int]) -> None:
        row[KIND], row[Q_NORM], row[K_NORM] = ATTENTION, self._norm(block.q_norm), self._norm(block.k_norm)
        row[AFTER_ROPE], row[NEOX] = int(block.norms_after_rope), int(block.rope.neox)
        row[M1], row[M2], row[M3] = (self._matrix(w, bias) for w, bias in
                                     ((block.q, block.q_bias), (block.k, block.k_bias), (block.v, block.v_bias)))
        row[M4] = self._matrix(block.o, block.o_bias)
        row[ROPE] = _index(self.ropes, block.rope, lambda a, b: a is b)
        row[N_HEAD], row[N_KV], row[LAYER] = block.n_head, block.n_head_kv, self._attention_layers
        self._attention_layers += 1
        row[VISIBLE] = _index(self.visibility, (block.sliding_window, block.causal), lambda a, b: a == b)
        row[SINKS] = self._vector(self._runner.vector(block.sinks)) if block.sinks is not None else -1
        self._attentions.append(block)
        self.scales.append(block.scale)
        self._outputs(row[M1:M4], [row[M4]])

    def _feed_forward(self, block: GatedFeedForward, row: list[int]) -> None:
        row[KIND], self._activation = FEED_FORWARD, block.activation
        row[M1] = self._matrix(block.gate, None) if block.gate is not None else -1
        row[M2], row[M3] = self._matrix(block.up, block.up_bias), self._matrix(block.down, block.down_bias)
        self.scales.append(0.0)
        self._outputs([m for m in row[M1:M3] if m >= 0], [row[M3]])

    def _mamba2(self, block: Mamba2, row: list[int]) -> None:
        row[M2], row[M3] = self._matrix(block.in_proj, None), self._matrix(block.out_proj, None)
        row[CONV_BIAS] = self._vector(self._runner.vector(block.conv_bias)) if block.conv_bias is not None else -1
        row[N_HEAD], row[N_GROUP], row[D_STATE] = block.n_head, block.n_group, block.d_state
        self._recurrent(block, row, MAMBA2, (block.dt_bias, block.a, block.d), block.out_proj.shape[1])
        self._outputs([row[M2]], [row[M3]])

    def _delta_net(self, block: GatedDeltaNet, row: list[int]) -> None:
        row[M1], row[M2], row[M3], row[M4], row[M5] = (self._matrix(w, None) for w in _weights(block))
        row[N_HEAD], row[N_KV], row[D_STATE] = block.n_v_head, block.n_k_head, block.head_dim
        row[L2_NORM] = len(self.norms)  # q's and k's: weights of one, eps / head_dim (runner._l2_norm)
        self.norms.append([self._vector(np.ones(block.head_dim, np.float32)), block.head_dim])
        self.eps.append(block.l2_eps / block.head_dim)
        self._recurrent(block, row, DELTA_NET, (block.dt_bias, block.a), block.n_v_head * block.head_dim)
        self._outputs(row[M1 : M4 + 1], [row[M5]])

    def _recurrent(self, block, row: list[int], kind: int, scalars: tuple[Weight, ...], d_inner: int) -> None:
        """What the recurrent blocks' rows share: the convolution, the per-head scalars (SSM), the out_norm, the
        state's number, and the room their rows take."""
        row[KIND], row[LAYER], self._activation = kind, self.states, "silu"
        row[CONV], row[CONV_WIDTH] = self._taps(block.conv), block.conv.shape[1]
        row[SSM] = self._vector(np.concatenate([self._runner.vector(w) for w in scalars]))
        row[D_INNER], row[OUT_NORM] = d_inner, self._norm(block.out_norm)
        self.states += 1
        self.scales.append(0.0)
        self._ssm.append((block.conv.shape[0], d_inner, row[CONV_WIDTH]))

    def _taps(self, conv: Weight) -> int:
        """A convolution's weights [channels, width] as [width, channels] in the pool."""
        taps = self._runner.vector(conv).reshape(conv.shape).T
        return self._vector(np.ascontiguousarray(taps).ravel())

    @property
    def heads_per_call(self) -> int:
        """The query heads an attention kernel call takes (one head size and group for every fused block:
        refusal), or 0 where no attention block is fused."""
        first = self._attentions[0] if self._attentions else None
        return ops.heads_per_call(first.n_head // first.n_head_kv) if first is not None else 0

    @property
    def head_dim(self) -> int:
        """Every fused attention block's head size (refusal), or 0 where none is fused."""
        return self._attentions[0].head_dim if self._attentions else 0

    def code_kinds(self) -> tuple[int, bool, bool]:
        """What the code the pass calls by address is compiled for (compiled_code's arguments)."""
        return self.heads_per_call, self._activation == "gelu_tanh", bool(self._ssm)

    def plan(self, residual_scale: float, context: int) -> Plan:
        """The tables every run's plan shares, with no block rows of its own (parts gives each run its rows)."""
        count = self.heads_per_call
        code = compiled_code(*self.code_kinds())
        return Plan(np.zeros((0, BLOCK_FIELDS), np.int64), np.array(self.matrices, np.int64),
                    np.array(self.norms, np.int64).reshape(-1, 2), np.array(self.eps, np.float64),
                    np.concatenate(self.floats), np.zeros(0), code, float(residual_scale), self.head_dim, count,
                    -(-context // KEY_BLOCK), context, 0)

    def parts(self, whole: Plan, one_row: bool) -> list:
        """The stack in block order: a FusedRun for each run of fused blocks (whole's tables, the run's rows), and
        the blocks between them; with one_row False, the blocks with a recurrent mixer among the latter."""
        parts, run = [], []
        for first, end, block in self._order + [(None, None, None)]:
            if first is not None and (one_row or not any(isinstance(m, RECURRENT) for m in _mixers(block))):
                run = [run[0] if run else first, end]
                continue
            if run:
                parts.append(self._run(whole, *run))
                run = []
            if block is not None:
                parts.append(block)
        return parts

    def _run(self, whole: Plan, first: int, last: int) -> FusedRun:
        """Rows first .. last - 1 as a FusedRun."""
        blocks = np.array(self.blocks[first:last], np.int64)
        plan = whole._replace(blocks=blocks, scales=np.array(self.scales[first:last], np.float64),
                              n_phases=int((STAGES[blocks[:, KIND]] >= 0).sum()))
        kinds = blocks[:, KIND]
        return FusedRun(plan, int((kinds == ATTENTION).sum()), int((kinds == SHORT_CONV).sum()),
                        tuple(int(layer) for layer in blocks[(kinds == MAMBA2) | (kinds == DELTA_NET), LAYER]))

    def room(self, most_rows: int, context: int, workers: int) -> list[np.ndarray]:
        widest = max([m.k for m in self.kept] + [channels for channels, _, _ in self._ssm])  # ONES covers v too
        most_heads = max((a.n_head for a in self._attentions), default=0)
        most_ssm = max((ssm_floats(most_rows, *shape) for shape in self._ssm), default=0)
        return room_arrays(most_rows, -(-widest // 256) * 256, self.most_out, most_heads, self.head_dim,
                           self.heads_per_call, context, workers, most_ssm)

    def _outputs(self, *phases: list[int]) -> None:
        for phase in phases:
            self.most_out = max(self.most_out, sum(self.kept[m].rows for m in phase))

    def _norm(self, norm: Optional[RmsNorm]) -> int:
        if norm is None:
            return -1
        weights = self._runner.vector(norm.weight)
        self.norms.append([self._vector(weights), len(weights)])
        self.eps.append(norm.eps)
        return len(self.norms) - 1

    def _matrix(self, weight: Weight, bias: Optional[Weight]) -> int:
        matrix = self._runner.matrix(weight)
        acts = activations(matrix.activations, np.zeros((1, matrix.k), np.float32))
        rows_at = matrix.rows_address(acts, np.zeros((1, matrix.rows), np.float32))
        blocks = matrix.blocks
        bias_at = self._vector(self._runner.vector(bias)) if bias is not None else -1
        self.matrices.append([rows_at, blocks.ctypes.data, matrix.rows, blocks.shape[1], blocks.itemsize,
                              _ACTS[matrix.activations], bias_at])
        self.kept.append(matrix)
        return len(self.matrices) - 1

    def _vector(self, values: np.ndarray) -> int:
        self.floats.append(values)
        self._size += len(values)
        return self._size - len(values)


def compiled_code(count: int, gelu: bool, recurrent: bool) -> np.ndarray:
    """Plan.code: where the code the pass calls by address is, compiled (or loaded from numba's cache) for the
    arrays' types as the pass makes them (their sizes do not matter), ATTEND and GATE for the model's head count
    and activation; and run_pass, which Torque calls, compiled likewise."""
    code = np.zeros(CODE, np.int64)
    plan, step, x, room, taken, finished = _samples()
    compile_for(fused.run_pass, (plan, step, room, taken, finished, x, 0))
    code[WALK] = compiled_address(fused.walk, (plan, step, x, room, taken, finished, 0, 0))
    phase = (plan, step, x, room, taken, finished, 0, 0, 0, 0, 0)
    code[SERIAL] = compiled_address(fused.serial_phase, phase)
    code[WORK] = compiled_address(work.serial, (plan, step, x, room, 0, 0))
    code[PRODUCTS] = compiled_address(fused.products_phase, phase)
    code[JOBS] = compiled_address(fused.jobs_phase, phase)
    q, d, sums = activations("q8_0", np.zeros((1, 32), np.float32))
    code[QUANTIZE] = compiled_address(_rows_serial, (0, x, q, d, sums))
    if count:  # f16 caches
        code[ATTEND] = ops.attend_address(np.dtype(np.uint16), np.dtype(np.uint16), count)
    code[GATE] = ops.gate_address(gelu)
    if recurrent:
        code[RECURRENT_WORK] = compiled_address(recurrent_work.serial, (plan, step, x, room, 0, 0))
        code[SCAN] = compiled_address(fused.scan_phase, phase)
    return code


def _samples() -> tuple:
    """A plan, step, rows, room and phase counters of the types the pass gives the code it calls by address."""
    table, flat = np.zeros((1, 1), np.int64), np.zeros(1, np.int64)
    plan = Plan(table, table, table, np.zeros(1), np.zeros(1, np.float32), np.zeros(1), np.zeros(CODE, np.int64),
                1.0, 0, 0, 0, 0, 0)
    step = Step(flat, flat, np.zeros((1, 1, 2), np.int64), table, table, np.zeros((1, 1, 1)), np.zeros((1, 1, 1)),
                table, table)
    return (plan, step, np.zeros((1, 1), np.float32), np.zeros(ROOM_FIELDS, np.int64), np.zeros((1, 1, 1), np.int64),
            table)


def _index(seen: list, item, same) -> int:
    """item's index in seen, added if no known one is the same."""
    for i, known in enumerate(seen):
        if same(known, item):
            return i
    seen.append(item)
    return len(seen) - 1
