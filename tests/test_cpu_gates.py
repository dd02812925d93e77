"""The CPU feed-forward gates (kinetic_cpu.ops.gate): SiLU or tanh-approximated GELU of g, times u, in
float64 and then rounded once to float32, so within one float32 rounding (and exponential.exp's 2 ulp) of
numpy's float64 formula, on one thread or several, whatever the row length."""

from __future__ import annotations

import numpy as np
import pytest

from kinetic_cpu import ops


def reference(g, u, gelu):
    x = g.astype(np.float64)
    argument = -1.5957691216057308 * (x + 0.044715 * x * x * x) if gelu else -x
    with np.errstate(over="ignore"):
        return x / (1.0 + np.exp(argument)) * u.astype(np.float64)


@pytest.mark.parametrize("gelu", [False, True])
@pytest.mark.parametrize("shape", [(1, 13), (3, 1000), (9, 4867)])  # the last goes to threads
def test_gates_round_the_float64_formula_once(gelu, shape):
    rng = np.random.default_rng(shape[1])
    g = (rng.standard_normal(shape) * 4).astype(np.float32)
    g[0, :5] = [0.0, 60.0, -60.0, 1e4, -1e4]  # e^-x past float64's range: the gate is 0 (or x)
    u = rng.standard_normal(shape).astype(np.float32)
    want = reference(g, u, gelu)
    got = ops.gate(g, u, gelu)
    assert got.dtype == np.float32 and got.shape == shape
    assert np.allclose(got, want, rtol=2.0**-23, atol=np.finfo(np.float32).smallest_subnormal)  # underflow: 0
