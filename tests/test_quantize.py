"""kinetic quantize writes llama-quantize's file byte for byte (no importance matrix): every target type, on random
models of two families in F16 and F32, on a Q8_0 model and on the F16 copy of a real model, itself llama-quantize's
(tests/golden/quantize.json, made by scripts/make_quantize_golden.py); each tensor gets the type llama-quantize
gives it."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import gguf
import pytest

from kinetic.testing import real_models
from kinetic.testing.quantize_cases import CASES, REAL, TARGETS

GOLDEN = json.loads((Path(__file__).parent / "golden" / "quantize.json").read_text())


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, timeout=600)


def quantized(source: Path, out: Path, target: str) -> Path:
    done = kinetic("quantize", str(source), str(out), target)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} ({target}, ")
    return out


def assert_llama_quantizes(out: Path, expected: dict) -> None:
    assert {t.name: t.tensor_type.name for t in gguf.GGUFReader(out).tensors} == expected["types"]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == expected["sha256"]


@pytest.fixture(scope="module", params=[*CASES, f"{REAL}-f16"])
def source(request, tmp_path_factory) -> tuple[str, Path]:
    folder = tmp_path_factory.mktemp("quantize")
    if request.param in CASES:
        return request.param, CASES[request.param](folder / f"{request.param}.gguf")
    copy = quantized(real_models.fetch(REAL), folder / "f16.gguf", "F16")
    assert_llama_quantizes(copy, GOLDEN[request.param]["F16"])
    return request.param, copy


@pytest.mark.parametrize("target", TARGETS)
def test_quantize_writes_llama_quantizes_file(source, target, tmp_path):
    case, path = source
    assert_llama_quantizes(quantized(path, tmp_path / f"{case}-{target}.gguf", target), GOLDEN[case][target])


def test_quantize_refuses_what_it_does_not_write(tmp_path):
    path = CASES["gemma3-f32"](tmp_path / "m.gguf")
    done = kinetic("quantize", str(path), str(tmp_path / "out.gguf"), "Q3_K_M")
    assert (done.returncode, done.stderr) == (2, "kinetic quantize: TYPE must be one of Q8_0, Q6_K, Q5_K_M, Q4_K_M, "
                                                 "Q4_0, F16, not Q3_K_M (see kinetic quantize --help)\n")
    q4 = tmp_path / "q4.gguf"
    assert kinetic("quantize", str(path), str(q4), "Q4_0").returncode == 0
    done = kinetic("quantize", str(q4), str(tmp_path / "again.gguf"), "Q8_0")
    assert (done.returncode, done.stderr) == (1, "kinetic: kinetic quantize reads F32, F16, BF16 or Q8_0 "
                                                           "tensors; token_embd.weight is Q4_0\n")
    assert not (tmp_path / "again.gguf").exists() and not (tmp_path / "again.gguf.partial").exists()
