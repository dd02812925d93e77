"""llama.cpp's flags: renamed, accepted and dropped, or refused with one line saying what to use."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kinetic.cli.llama_flags import RefusedFlag, translate


@pytest.mark.parametrize("argv, expected", [
    (["-sys", "Be brief", "--temperature", "0.5"], ["--system", "Be brief", "--temp", "0.5"]),
    (["--temperature=0.5", "-dev", "cpu"], ["--temp=0.5", "--device", "cpu"]),
    (["-fa", "on", "--jinja", "-b", "512", "-ub=256", "--no-warmup", "-p", "hi"], ["-p", "hi"]),
    (["-ngl", "0"], ["--device", "cpu"]),
    (["-ngl", "99"], ["--device", "cuda"]),
    (["--n-gpu-layers", "12"], ["--device", "cuda", "--gpu-layers", "12"]),
    (["-ngl", "all"], ["--device", "cuda"]),
])
def test_translate(argv, expected):
    assert translate(argv) == expected


@pytest.mark.parametrize("flag, message", [
    ("-ts", "-ts is a llama.cpp flag: Kinetic runs the model wholly on one device; choose it with --device."),
    ("-md", "-md is a llama.cpp flag: speculative decoding is automatic and needs no draft model."),
    ("-hf", "-hf is a llama.cpp flag: download with kinetic pull <org>/<repo>[:<quant>], then run it by name."),
    ("--chat-template", "--chat-template is a llama.cpp flag: built-in template names are not supported; "
                        "pass a Jinja file with --chat-template-file."),
])
def test_refused_flags_say_what_to_use(flag, message):
    with pytest.raises(RefusedFlag) as refused:
        translate(["model.gguf", flag, "x"])
    assert str(refused.value) == message


def test_refused_flag_exits_2_with_one_line():
    result = subprocess.run([sys.executable, "-m", "kinetic", "run", "model.gguf", "-ts", "1,1", "Hello"],
                            capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("kinetic: -ts is a llama.cpp flag: Kinetic runs the model wholly on one device; "
                             "choose it with --device.\n")


@pytest.mark.parametrize("flag, reason", [
    ("-ctk", "Kinetic keeps keys and values in a float16 cache, llama.cpp's default"),
    ("--cache-type-v=q8_0", "Kinetic keeps keys and values in a float16 cache, llama.cpp's default"),
])
def test_flags_of_later_versions_are_refused_as_not_available_yet(flag, reason):
    with pytest.raises(RefusedFlag) as refused:
        translate(["serve", "model.gguf", flag, "4"])
    assert str(refused.value) == f"{flag.partition('=')[0]} is not available yet: {reason}."


@pytest.mark.parametrize("flag", ["-np", "--parallel"])
def test_parallel_is_servers_own_flag(flag):
    assert translate(["serve", "model.gguf", flag, "4"]) == ["serve", "model.gguf", flag, "4"]
    result = subprocess.run([sys.executable, "-m", "kinetic", "serve", "model.gguf", flag, "0"],
                            capture_output=True, text=True)
    assert result.returncode == 2 and "greater than or equal to 1" in result.stderr


@pytest.mark.parametrize("argv, expected", [
    (["bench", "m.gguf", "--compare"], ["bench", "m.gguf", "--compare="]),
    (["bench", "m.gguf", "--compare", "--json"], ["bench", "m.gguf", "--compare=", "--json"]),
    (["bench", "m.gguf", "--compare", "/opt/llama-bench"], ["bench", "m.gguf", "--compare", "/opt/llama-bench"]),
])
def test_bench_compare_takes_an_optional_path(argv, expected):
    from kinetic.cli.main import bare_compare

    assert bare_compare(argv) == expected
