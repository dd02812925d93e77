"""What one weight type's kernel is, as the row driver sees it.

A weight row is walked in steps (a block; a float weight), step s stored at byte s * itemsize of the row
(w: the raw matrix viewed as [rows, steps] records, see blocks.py). Numba intrinsics take steps:

    full(w, at, s, acts, acc)   steps s .. s + full_steps - 1, s a multiple of full_steps
    half(w, at, s, acts, acc)   steps s .. s + full_steps / 2 - 1 after the last full call, where a kernel
                                has it (else None) and that many steps remain
    one(w, at, s, acts, acc)    step s alone

at: the byte offset of step s in w; acts: the activations (activations.py) as a tuple of [n_tokens, ...]
arrays; acc: [n_tokens + pad, 8] float32. Each decodes its weights once, then for every token adds into the
token's acc row, in step order: the value of step s into lane s % 8 (the float types), or 8 lanes per
step (the block types, as ggml's AVX2 vec_dot keeps 8 lanes). The driver sums the 8 lanes in one fixed
tree, so an output depends on nothing but its row, its token and k.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, NamedTuple

from numba import njit, types
from numba.extending import intrinsic

from kinetic_cpu.kernels import ir


class Kernel(NamedTuple):
    full: Callable
    one: Callable
    full_steps: int
    activations: str  # "q8_0", "q8_k" or "float": what acts holds (see activations.py)
    half: Callable | None = None


class Step:
    """One call of a step intrinsic, as IR: its weights' pointer, the step index and the per-token pointers."""

    def __init__(self, context, builder, signature, args):
        self.context, self.builder = context, builder
        w_type, _, _, self._acts_type, self._acc_type = signature.args
        w, at, self.s, self._acts, self._acc = args
        self.weights = ir.byte_pointer(context, builder, w_type, w, at)  # i8* to step s

    def activation(self, i: int, t, index):
        """i8* to acts[i][t, index]."""
        array_type, array = ir.member(self.builder, self._acts_type, self._acts, i)
        return ir.row_pointer(self.context, self.builder, array_type, array, t, index)

    def times_s(self, n: int):
        return self.builder.mul(self.s, ir.const(ir.I64, n))

    @contextmanager
    def tokens(self):
        array_type, array = ir.member(self.builder, self._acts_type, self._acts, 0)
        with ir.for_tokens(self.context, self.builder, array_type, array) as t:
            yield t

    def by_batch_size(self, single: Callable, several: Callable) -> None:
        """single(t) for a batch of one token (t = 0: no loop, so a kernel can decode each block where it
        uses it instead of holding all of them), else several(), which loops over the tokens itself."""
        array_type, array = ir.member(self.builder, self._acts_type, self._acts, 0)
        n = ir.n_tokens(self.context, self.builder, array_type, array)
        with self.builder.if_else(self.builder.icmp_signed("==", n, ir.const(ir.I64, 1))) as (one, many):
            with one:
                single(ir.const(ir.I64, 0))
            with many:
                several()

    def accumulate(self, t, n_lanes: int, update: Callable) -> None:
        """acc[t, lanes] = update(acc[t, lanes]), update building IR from and to an <n_lanes x float>: lanes
        s % 8 .. s % 8 + n_lanes - 1."""
        lane = ir.const(ir.I64, 0) if n_lanes == 8 else self.builder.urem(self.s, ir.const(ir.I64, 8))
        pointer = ir.row_pointer(self.context, self.builder, self._acc_type, self._acc, t, lane)
        ir.store(self.builder, update(ir.load(self.builder, pointer, 0, ir.vector(ir.F32, n_lanes))), pointer, 0)

    def add(self, t, n_lanes: int, value) -> None:
        """acc[t, lanes] += value: lanes 0..7 for a full call of 8 (s a multiple of 8), else lane s % 8."""
        lane = ir.const(ir.I64, 0) if n_lanes == 8 else self.builder.urem(self.s, ir.const(ir.I64, 8))
        ir.add_into(self.builder, ir.row_pointer(self.context, self.builder, self._acc_type, self._acc, t, lane), value)


def step_intrinsic(body: Callable[[Step], None]):
    """The intrinsic (w, at, s, acts, acc) -> None whose IR body(Step) builds."""

    @intrinsic
    def step(typingctx, w, at, s, acts, acc):
        def codegen(context, builder, signature, args):
            body(Step(context, builder, signature, args))
            return context.get_dummy_value()

        return types.none(w, types.intp, types.intp, acts, acc), codegen

    return step


@njit(cache=True, nogil=True)
def lanes_sum(acc, t):  # acc: [n, 8] float32
    """The fixed tree over token t's 8 lanes: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))."""
    return ((acc[t, 0] + acc[t, 4]) + (acc[t, 2] + acc[t, 6])) + ((acc[t, 1] + acc[t, 5]) + (acc[t, 3] + acc[t, 7]))
