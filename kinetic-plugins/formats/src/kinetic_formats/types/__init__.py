"""Every GGUF weight type, one module each, defined by its reference numpy dequantization."""

from kinetic.contracts import TensorType

from kinetic_formats.types import (
    bf16,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    iq1_m,
    iq1_s,
    iq2_s,
    iq2_xs,
    iq2_xxs,
    iq3_s,
    iq3_xxs,
    iq4_nl,
    iq4_xs,
    mxfp4,
    q2_k,
    q3_k,
    q4_0,
    q4_1,
    q4_k,
    q5_0,
    q5_1,
    q5_k,
    q6_k,
    q8_0,
    q8_1,
    q8_k,
    tq1_0,
    tq2_0,
)

_MODULES = (
    f32, f16, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_k, q3_k, q4_k, q5_k, q6_k, q8_k, iq2_xxs, iq2_xs,
    iq3_xxs, iq1_s, iq4_nl, iq3_s, iq2_s, iq4_xs, i8, i16, i32, i64, f64, iq1_m, bf16, tq1_0, tq2_0, mxfp4,
)  # fmt: skip

# In GGUF id order.
TENSOR_TYPES: tuple[TensorType, ...] = tuple(sorted((m.TENSOR_TYPE for m in _MODULES), key=lambda t: t.id))
