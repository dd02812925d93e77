"""Every GGUF weight type decodes as ggml does.

gguf-py's dequantization is the oracle: random blocks and every tensor of the real test models must decode to
the same float32 bits (any NaN matches any NaN: its payload depends on operand order, not on the format).
Types gguf-py does not decode are checked on hand-made blocks with known values.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
from gguf.quants import dequantize as oracle_dequantize

from kinetic import open_model
from kinetic.plugins import load_plugins
from kinetic_formats.types import TENSOR_TYPES

BY_NAME = {t.name: t for t in TENSOR_TYPES}
GGUF_IDS = [0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
            34, 35, 39]  # fmt: skip
WITHOUT_ORACLE = {"Q8_1", "Q8_K", "I8", "I16", "I32", "I64", "F64"}
# gguf 0.19.0 sizes Q8_1 as two float32 and 32 int8 (40 bytes); ggml's block_q8_1 holds two f16 (36 bytes).
GGML_SIZES = {"Q8_1": (32, 36)}


def assert_same_bits(ours: np.ndarray, expected: np.ndarray) -> None:
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(ours), nan)
    np.testing.assert_array_equal(ours.view(np.uint32)[~nan], expected.view(np.uint32)[~nan])


def test_every_ggml_type_in_id_order():
    assert [t.id for t in TENSOR_TYPES] == GGUF_IDS
    assert [t.name for t in TENSOR_TYPES] == [GGMLQuantizationType(i).name for i in GGUF_IDS]


def test_the_plugin_registers_every_type():
    registry = load_plugins().tensor_types
    assert all(registry[t.id] is t and registry[t.name] is t for t in TENSOR_TYPES)


@pytest.mark.parametrize("tensor_type", TENSOR_TYPES, ids=lambda t: t.name)
def test_sizes_match_ggml(tensor_type):
    expected = GGML_SIZES.get(tensor_type.name, GGML_QUANT_SIZES[GGMLQuantizationType(tensor_type.id)])
    assert (tensor_type.block_size, tensor_type.type_size) == expected


@pytest.mark.parametrize("tensor_type", [t for t in TENSOR_TYPES if t.name not in WITHOUT_ORACLE], ids=lambda t: t.name)
def test_random_blocks_match_gguf_py(tensor_type):
    blocks = np.random.default_rng(tensor_type.id).integers(0, 256, (600, tensor_type.type_size), dtype=np.uint8)
    with np.errstate(all="ignore"):
        expected = oracle_dequantize(blocks, GGMLQuantizationType(tensor_type.id))
    assert_same_bits(tensor_type.dequantize(blocks), expected.reshape(600, tensor_type.block_size))


def _f16(value: float) -> bytes:
    return np.float16(value).tobytes()


def test_q8_1_is_d_times_q():
    q = np.array([-128, -1, 0, 1, 127] + [3] * 27, np.int8)
    block = _f16(0.5) + _f16(1234.0) + q.tobytes()  # s = d * sum(q) only serves dot products
    out = BY_NAME["Q8_1"].dequantize(np.frombuffer(block, np.uint8).reshape(1, 36))
    np.testing.assert_array_equal(out[0, :6], [-64.0, -0.5, 0.0, 0.5, 63.5, 1.5])


def test_q8_k_is_d_times_q():
    q = np.arange(-128, 128, dtype=np.int8)
    block = np.float32(0.25).tobytes() + q.tobytes() + np.zeros(16, np.int16).tobytes()
    out = BY_NAME["Q8_K"].dequantize(np.frombuffer(block, np.uint8).reshape(1, 292))
    np.testing.assert_array_equal(out[0, [0, 127, 128, 129, 255]], [-32.0, -0.25, 0.0, 0.25, 31.75])


@pytest.mark.parametrize(
    ("name", "stored", "expected"),
    [
        ("I8", np.array([-128, -1, 0, 1, 127], "i1"), [-128.0, -1.0, 0.0, 1.0, 127.0]),
        ("I16", np.array([-32768, -1, 0, 32767], "<i2"), [-32768.0, -1.0, 0.0, 32767.0]),
        ("I32", np.array([-(2**31), -7, 2**24 + 1, 2**31 - 1], "<i4"), [-(2.0**31), -7.0, 2.0**24, 2.0**31]),
        ("I64", np.array([-(2**63), 5, 2**40 + 1], "<i8"), [-(2.0**63), 5.0, 2.0**40]),
        ("F64", np.array([0.1, -2.5, 1e300, 1e-60], "<f8"), [np.float32(0.1), -2.5, np.inf, 0.0]),
    ],
)
def test_plain_types_round_to_float32(name, stored, expected):
    tensor_type = BY_NAME[name]
    out = tensor_type.dequantize(np.frombuffer(stored.tobytes(), np.uint8).reshape(-1, tensor_type.type_size))
    np.testing.assert_array_equal(out[:, 0], np.array(expected, np.float32))


def test_every_tensor_of_the_real_models_matches_gguf_py(real_gguf):
    # Kinetic's reader gives the tensor table; gguf-py's own reader would take ~30 s per file just to parse the
    # vocabulary. The byte count is checked against gguf-py's sizes, so the oracle sees the tensor's own bytes.
    model = open_model(real_gguf)
    for name, info in model.tensors.items():
        qtype = GGMLQuantizationType(info.type.id)
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        assert info.nbytes == info.n_elements // block_size * type_size, name
        blocks = model.raw(name).reshape(-1, type_size)
        step = (1 << 22) // block_size  # a few million weights at a time: the memory is reused, not faulted in anew
        for start in range(0, len(blocks), step):
            part = blocks[start : start + step]
            ours = info.type.dequantize(part)
            expected = oracle_dequantize(part.reshape(-1), qtype).reshape(ours.shape)
            assert np.array_equal(ours.view(np.uint32), expected.view(np.uint32)), f"{name} ({info.type.name})"
