"""`kinetic info`, `kinetic --version` and the command line's exit codes."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter, defaultdict

import pytest
from conftest import gguf_oracle

from kinetic import __version__


def kinetic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True)


EXPECTED = {
    "qwen": [
        "qwen2.5-coder-0.5b-instruct.gguf",
        "  name           Qwen2.5 Coder 0.5B Instruct AWQ",
        "  architecture   qwen2 (supported)",
        "  size           0.46 GiB, 0.63 B parameters",
        "  context        32768 tokens",
        "  layers         24, width 896",
        "  prediction     no",
    ],
    "gemma": [
        "gemma-3-270m-q4_k_m.gguf",
        "  name           Gemma 3 270m",
        "  architecture   gemma3 (supported)",
        "  size           0.24 GiB, 0.27 B parameters",
        "  context        32768 tokens",
        "  layers         18, width 640",
        "  prediction     no",
    ],
}
TOKENIZER = {
    "qwen": "  tokenizer      gpt2 (qwen2), 151936 tokens, BOS none, EOS <|im_end|>",
    "gemma": "  tokenizer      llama, 262144 tokens, BOS <bos>, EOS <eos>",
}


CHAT_TEMPLATE = {
    "qwen": "  chat template  2507 bytes",
    "gemma": "  chat template  none",  # this file carries no template
}


def weights_table(path) -> list[tuple[str, int, float]]:
    """(type, tensors, MiB) per weight type, largest first, computed with gguf-py."""
    counts, sizes = Counter(), defaultdict(int)
    for tensor in gguf_oracle(path).tensors:
        counts[tensor.tensor_type.name] += 1
        sizes[tensor.tensor_type.name] += int(tensor.n_bytes)
    return [(name, counts[name], round(sizes[name] / 2**20, 1)) for name in sorted(sizes, key=lambda n: -sizes[n])]


@pytest.mark.parametrize("key", ["qwen", "gemma"])
def test_info_on_real_models(key, request):
    path = request.getfixturevalue(f"{key}_gguf")
    result = kinetic("info", str(path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:7] == EXPECTED[key]
    table = lines[7 : 7 + len(weights_table(path))]
    parsed = [(line[17:].split()[0], int(line[17:].split()[1]), float(line[17:].split()[3])) for line in table]
    assert table[0].startswith("  weights        ")
    assert parsed == weights_table(path)
    assert lines[7 + len(parsed):] == [TOKENIZER[key], CHAT_TEMPLATE[key]]


def test_info_takes_m_like_llama_cpp(qwen_gguf):
    assert kinetic("info", "-m", str(qwen_gguf)).stdout == kinetic("info", str(qwen_gguf)).stdout


def test_failures_are_one_line_with_exit_1(tmp_path):
    result = kinetic("info", str(tmp_path / "missing.gguf"))
    assert result.returncode == 1
    assert result.stderr == f"kinetic: {tmp_path / 'missing.gguf'}: no such file; check the path\n"
    (tmp_path / "text.gguf").write_text("hello world")
    result = kinetic("info", str(tmp_path / "text.gguf"))
    assert (result.returncode, result.stderr) == (1, "kinetic: text.gguf: not a GGUF file (it starts with b'hell', not b'GGUF')\n")


@pytest.mark.parametrize("args, message", [
    (["info", "--bogus", "x.gguf"], "kinetic info: No such option: --bogus (see kinetic info --help)"),
    (["frobnicate"], "kinetic: No such command 'frobnicate' (see kinetic --help)"),
    (["info"], "kinetic info: missing the model: give a .gguf file as the first argument or with -m (see kinetic info --help)"),
])
def test_bad_command_lines_exit_2_with_one_line(args, message):
    result = kinetic(*args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n")


def test_version_and_help():
    assert kinetic("--version").stdout == f"kinetic {__version__}\n"
    help_text = kinetic("info", "--help")
    assert help_text.returncode == 0 and "Show what a model file contains" in help_text.stdout
