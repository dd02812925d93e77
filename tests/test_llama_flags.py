"""llama.cpp's flags: the reference docs' table walked row by row, and every flag llama-server's and llama-cli's
--help list (llama.cpp 11434, tests/golden/llama_flags/, made by scripts/make_llama_flags_golden.py)
recognised by the commands that stand for them: taken, accepted and dropped, or refused with one line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from kinetic.cli.llama_flag_table import ACCEPTED, REFUSED_IN
from kinetic.cli.llama_flags import RefusedFlag, translate
from kinetic.cli.main import command_options, main

GOLDEN = Path(__file__).parent / "golden" / "llama_flags"
COMMANDS = command_options()
FLAG = re.compile(r"--?[A-Za-z][\w.-]*")
HELP_COLUMN = 40  # llama.cpp's common_arg::to_string: the help starts here, or on the next line


def help_flags(tool: str) -> dict[str, bool]:
    """Every flag spelling a tool's --help lists, and whether it takes a value (a value hint follows)."""
    flags = {}
    for line in (GOLDEN / f"{tool}-help.txt").read_text().splitlines():
        if not line.startswith("-"):
            continue
        head = line[:HELP_COLUMN] if line[HELP_COLUMN - 3:HELP_COLUMN] == "   " else line
        words = [word.rstrip(",") for word in head.split()]
        spellings = [word for word in words if FLAG.fullmatch(word)]
        spellings = spellings[:next((i for i, word in enumerate(words) if not FLAG.fullmatch(word)), len(words))]
        flags.update(dict.fromkeys(spellings, len(spellings) < len(words)))
    return flags


def spec_rows() -> list[tuple[str, str]]:
    lines = (GOLDEN / "spec_table.tsv").read_text().splitlines()
    return [tuple(line.split("\t")) for line in lines if not line.startswith("#")]


def outcome(command: str, flag: str, value: str | None = "1") -> tuple[str, list[str]]:
    """("refused", [the line]) or ("kept", the words after the model)."""
    try:
        words = translate([command, "m.gguf", flag, *([value] if value is not None else [])], COMMANDS)
    except RefusedFlag as refused:
        return "refused", [str(refused)]
    return "kept", words[2:]


# The reference docs' table, row by row: a rename works where the command has the option and is refused with
# a line naming the commands that have it elsewhere; accepted flags are dropped with their value; refused flags
# stop with the table's line. run and chat go beyond one row: they take --grammar and the JSON Schema flags
# (the docs' roadmap: "constrained output ... on the roadmap").
CONSTRAINED = {"--grammar", "--grammar-file", "-j", "--json-schema"}
# Where the table's line points to what this build refuses too (images through --mmproj, LoRA adapters), the
# line says what holds here instead; and kinetic chat is itself the conversation -cnv and -i ask for.
POINTS_ELSEWHERE = {"--image", "--control-vector", "--control-vector-scaled"}
CONVERSATION = {"-cnv", "--conversation", "-i", "--interactive", "--interactive-first"}
TABLE = [(flags, meaning, command) for flags, meaning in spec_rows() for command in ("run", "chat", "serve", "bench")]


@pytest.mark.parametrize("flags, meaning, command", TABLE, ids=[f"{c}:{f[:24]}" for f, _, c in TABLE])
def test_the_docs_table_row(flags, meaning, command):
    for flag in flags.split(", "):
        takes_value = ACCEPTED.get(flag, 1)
        kind, words = outcome(command, flag, "1" if takes_value else None)
        if meaning.startswith("works, as "):
            _check_renamed(command, flag, meaning.removeprefix("works, as "), kind, words)
        elif meaning.startswith("works: 0 means"):
            assert (kind, words) == ("kept", ["--gpu-layers", "1"])
        elif meaning.startswith("accepted and not needed"):
            assert (kind, words) == ("kept", []) or flag in COMMANDS[command]
        elif flag in CONSTRAINED and command in ("run", "chat"):
            assert (kind, words[:1]) == ("kept", [flag])
        elif flag in CONVERSATION and command == "chat":
            assert outcome(command, flag, None) == ("kept", [])
        elif flag in POINTS_ELSEWHERE:
            assert kind == "refused" and "not supported yet" in words[0] or "not available yet" in words[0]
            assert "--mmproj" not in words[0] and "--lora" not in words[0]
        else:
            assert kind == "refused" and words[0].startswith(f"{flag} is a llama.cpp flag")
            assert words[0].endswith(f": {meaning}.")


def _check_renamed(command: str, flag: str, name: str, kind: str, words: list[str]) -> None:
    if name in COMMANDS[command]:
        assert (kind, words) == ("kept", [name if flag not in COMMANDS[command] else flag, "1"])
    elif name in REFUSED_IN.get(command, {}):  # what the command does per request instead, e.g. serve's --system
        assert kind == "refused" and words[0].endswith(f": {REFUSED_IN[command][name]}.")
    else:
        takers = [other for other, options in COMMANDS.items() if name in options]
        assert takers and (kind, words) == ("refused", [f"kinetic {command} does not take {flag}: it works with "
                                                        f"kinetic {', '.join(takers)}."])


HELP = [(tool, command, flag, takes) for tool, commands in (("llama-server", ("serve",)), ("llama-cli", ("chat", "run")))
        for command in commands for flag, takes in help_flags(tool).items()]


@pytest.mark.parametrize("tool, command, flag, takes", HELP, ids=[f"{c}:{f}" for _, c, f, _ in HELP])
def test_every_flag_of_llama_cpps_help_is_recognised(tool, command, flag, takes):
    """Taken (as itself or renamed), dropped with its value, or refused with one line; never passed on for
    typer to call "No such option"."""
    kind, words = outcome(command, flag, "1" if takes else None)
    if kind == "refused":
        assert "\n" not in words[0] and words[0].endswith(".")
    elif flag != "--version":
        assert words == [] or words[0] in COMMANDS[command], f"{flag} is passed on unrecognised: {words}"
    if flag in ACCEPTED:
        assert ACCEPTED[flag] == takes, f"{flag}: the table and llama.cpp's help disagree on its value"


def test_the_help_lists_are_read_whole():
    server, cli = help_flags("llama-server"), help_flags("llama-cli")
    assert len(server) > 400 and len(cli) > 300
    assert server["--cors-origins"] and not server["--no-slots"] and server["-fa"] and cli["-p"]


@pytest.mark.parametrize("argv, expected", [
    (["run", "m.gguf", "-sys", "Be brief", "--temperature", "0.5"], ["--system", "Be brief", "--temp", "0.5"]),
    (["run", "m.gguf", "--temperature=0.5", "-dev", "cpu"], ["--temp=0.5", "--device", "cpu"]),
    (["run", "m.gguf", "-fa", "on", "--jinja", "-b", "512", "-ub=256", "--no-warmup", "-p", "hi"], ["-p", "hi"]),
    (["run", "m.gguf", "-ngl", "0"], ["--gpu-layers", "0"]),
    (["serve", "m.gguf", "--n-gpu-layers", "99", "-np", "2"], ["--gpu-layers", "99", "-np", "2"]),
    (["run", "m.gguf", "-p", "-ts is a flag", "--top-n-sigma", "1"], ["-p", "-ts is a flag", "--top-nsigma", "1"]),
    (["serve", "m.gguf", "-ctk", "q8_0", "--cache-type-v=f16", "-lm", "mmap"], ["--cache-type-k", "q8_0",
                                                                                "--cache-type-v=f16"]),
    (["bench", "m.gguf", "-r", "2", "-ngl", "all"], ["-r", "2", "--gpu-layers", "all"]),
    (["serve", "m.gguf", "-fa", "--port", "80", "--prio", "-1", "-c", "64"], ["--port", "80", "-c", "64"]),
])
def test_translate(argv, expected):
    assert translate(argv, COMMANDS) == argv[:2] + expected


@pytest.mark.parametrize("argv, message", [
    (["run", "m.gguf", "--port", "80"], "kinetic run does not take --port: it works with kinetic serve."),
    (["chat", "m.gguf", "-np", "2"], "kinetic chat does not take -np: it works with kinetic serve."),
    (["serve", "m.gguf", "--grammar", "root ::= \"x\""],
     "--grammar is a llama.cpp flag kinetic serve does not take: constrained output is in the server, through "
     "grammar and response_format."),
    (["serve", "m.gguf", "--reasoning-format", "none"], "--reasoning-format none is not available: Kinetic returns "
                                                        "the thinking in reasoning_content, the deepseek format."),
])
def test_refusals_say_what_to_use(argv, message):
    with pytest.raises(RefusedFlag) as refused:
        translate(argv, COMMANDS)
    assert str(refused.value) == message


def test_version_anywhere_prints_kinetics(capsys):
    assert main(["serve", "m.gguf", "--version"]) == 0
    assert capsys.readouterr().out.startswith("kinetic ")


@pytest.mark.parametrize("argv", [["run", "missing.gguf", "hi", "-ts", "1,1"], ["serve", "missing.gguf", "--ui"],
                                  ["chat", "missing.gguf", "--port", "1"]])
def test_a_refused_flag_exits_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("kinetic") and err.count("\n") == 1


def test_refused_flag_exits_2_from_the_command_line():
    result = subprocess.run([sys.executable, "-m", "kinetic", "run", "model.gguf", "-ts", "1,1", "Hello"],
                            capture_output=True, text=True)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("kinetic: -ts is a llama.cpp flag: Kinetic runs the model wholly on one device; "
                             "choose it with --device.\n")


@pytest.mark.parametrize("flag", ["-np", "--parallel"])
def test_parallel_is_servers_own_flag(flag, capsys):
    assert main(["serve", "model.gguf", flag, "0"]) == 2
    assert "greater than or equal to 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["bench", "m.gguf", "--compare"], ["bench", "m.gguf", "--compare="]),
    (["bench", "m.gguf", "--compare", "--json"], ["bench", "m.gguf", "--compare=", "--json"]),
    (["bench", "m.gguf", "--compare", "/opt/llama-bench"], ["bench", "m.gguf", "--compare", "/opt/llama-bench"]),
])
def test_bench_compare_takes_an_optional_path(argv, expected):
    from kinetic.cli.main import bare_compare

    assert bare_compare(argv) == expected


@pytest.mark.parametrize("command", ["run", "chat", "serve", "bench"])
@pytest.mark.parametrize("flag, value", [("-ctk", "q4_0"), ("-ctv", "bf16"), ("--cache-type-k", "f32"),
                                         ("--cache-type-v", "iq4_nl")])
def test_other_cache_types_are_refused_with_one_line(command, flag, value, capsys):
    assert main([command, "missing.gguf", flag, value]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("kinetic") and err.count("\n") == 1
    assert f"'{value}' is not a KV cache type Kinetic keeps; use f16 or q8_0" in err
