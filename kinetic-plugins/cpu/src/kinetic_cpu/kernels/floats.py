"""Kernels of the float types F32, F16 and BF16 against float32 activations.

A step is one weight: its value w * x goes to lane (index % 8). A full call takes 64 weights as 8 vectors of
8 products and adds them in one fixed tree ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7)) before adding the
result to the lanes; a row's last weights (k % 64) go one at a time.
"""

from __future__ import annotations

from kinetic_cpu.kernels import halves, ir
from kinetic_cpu.kernels.ir import F32, I16
from kinetic_cpu.kernels.kernel import Kernel, step_intrinsic

FULL = 64


def _weights(builder, pointer, offset: int, kind: str, n: int):
    """<n x float> of n weights stored as kind at byte offset."""
    if kind == "f32":
        return ir.load(builder, pointer, offset, ir.vector(F32, n))
    bits = ir.load(builder, pointer, offset, ir.vector(I16, n))
    return halves.f16_to_f32(builder, bits) if kind == "f16" else halves.bf16_to_f32(builder, bits)


def _tree(builder, values):
    while len(values) > 1:
        values = [builder.fadd(a, b) for a, b in zip(values[0::2], values[1::2])]
    return values[0]


def _floats(kind: str, size: int, n: int):
    """The intrinsic taking n weights (FULL or 1) stored one per `size` bytes as kind."""
    vectors, width = (n // 8, 8) if n > 1 else (1, 1)

    def body(step):
        b = step.builder
        weights = [_weights(b, step.weights, i * width * size, kind, width) for i in range(vectors)]
        with step.tokens() as t:
            x = step.activation(0, t, step.s)
            products = [b.fmul(w, ir.load(b, x, 4 * width * i, ir.vector(F32, width))) for i, w in enumerate(weights)]
            step.add(t, width, _tree(b, products))

    return step_intrinsic(body)


def _kernel(kind: str, size: int) -> Kernel:
    return Kernel(_floats(kind, size, FULL), _floats(kind, size, 1), FULL, "float")


KERNELS = {"F32": _kernel("f32", 4), "F16": _kernel("f16", 2), "BF16": _kernel("bf16", 2)}
