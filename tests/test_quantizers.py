"""The weight types' quantize is llama.cpp's reference quantizer byte for byte (what llama-quantize writes without
an importance matrix): on seeded inputs (build_case), each type's output hashes to what ggml's
ggml_quantize_chunk wrote (tests/golden/quantizers.json, made by scripts/make_quantizer_goldens.py); and
dequantize(quantize(x)) stays near x."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from kinetic.testing.quantizer_inputs import CASES, SEED, TYPES, build_case, cases_for

GOLDEN_PATH = Path(__file__).parent / "golden" / "quantizers.json"

# dequantize(quantize(x)) against x on the "normal" case: RMS of the error over RMS of x, at most
RELATIVE_RMS = {"Q8_0": 0.0065, "Q4_0": 0.1, "Q4_1": 0.09, "Q5_0": 0.05, "Q5_1": 0.045, "Q4_K": 0.085,
                "Q5_K": 0.045, "Q6_K": 0.022, "F16": 2.5e-4, "BF16": 2e-3, "F32": 0.0}  # fmt: skip


def quantized(type_name: str, name: str) -> bytes:
    """The type's quantize of case `name`, as bytes."""
    tensor_type = TYPES[type_name]
    blocks = build_case(name).reshape(-1, tensor_type.block_size)
    out = tensor_type.quantize(blocks)
    assert out.dtype == np.uint8 and out.shape == (len(blocks), tensor_type.type_size)
    return out.tobytes()


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN_PATH.read_text())


def test_golden_inputs_are_these(golden):
    assert golden["seed"] == SEED
    assert {name: [rows, n] for name, (rows, n, _) in CASES.items()} == {
        name: case["shape"] for name, case in golden["cases"].items()}  # fmt: skip
    assert sorted(golden["types"]) == sorted(TYPES)


@pytest.mark.parametrize("type_name", list(TYPES))
def test_quantize_is_ggmls_reference_byte_for_byte(golden, type_name):
    expected = golden["types"][type_name]
    assert list(expected["cases"]) == cases_for(type_name)
    outputs = {name: quantized(type_name, name) for name in expected["cases"]}
    got = {name: hashlib.sha256(out).hexdigest() for name, out in outputs.items()}
    assert [name for name in got if got[name] != expected["cases"][name]] == []  # the cases that differ
    assert hashlib.sha256(b"".join(outputs.values())).hexdigest() == expected["sha256"]


@pytest.mark.parametrize("type_name", list(TYPES))
def test_dequantize_of_quantize_is_near(type_name):
    tensor_type = TYPES[type_name]
    x = build_case("normal").reshape(-1, tensor_type.block_size)
    back = tensor_type.dequantize(tensor_type.quantize(x))
    relative_rms = np.sqrt(np.mean((back - x) ** 2, dtype=np.float64) / np.mean(x.astype(np.float64) ** 2))
    assert relative_rms <= RELATIVE_RMS[type_name]
