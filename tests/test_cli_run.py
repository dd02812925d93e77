"""`kinetic run` and `kinetic chat` on the real Qwen model: greedy and seeded answers, stdin, the status line."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

PROMPT = "Write a haiku about rivers."
STATUS = re.compile(r"^\[\d+ tokens at [\d.]+ tok/s; prompt \d+ tokens at [\d.]+ tok/s on the CPU\]$")


def kinetic(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinetic", *args], capture_output=True, text=True, input=stdin)


@pytest.fixture(scope="module")
def greedy_answer(qwen_gguf) -> subprocess.CompletedProcess:
    return kinetic("run", str(qwen_gguf), PROMPT, "--temp", "0", "-n", "12", "--device", "cpu")


def engines_greedy_answer(qwen_gguf, cache_types: tuple[str, str] = ("f16", "f16")) -> str:
    from kinetic.engine.options import SessionOptions
    from kinetic.engine.session import Session
    from kinetic.sampling.settings import SamplingSettings

    session = Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=1024, cache_types=cache_types))
    tokens = session.chat_prompt([{"role": "user", "content": PROMPT}])
    answer = list(session.generate(session.new_sequence(), tokens, SamplingSettings(temp=0), 12))
    return session.tokenizer.decode(answer, special=False) + "\n"


def test_run_greedy_answer_is_the_engines(greedy_answer, qwen_gguf):
    assert greedy_answer.returncode == 0, greedy_answer.stderr
    assert STATUS.match(greedy_answer.stderr.strip().splitlines()[-1])
    assert greedy_answer.stdout == engines_greedy_answer(qwen_gguf)


def test_run_takes_llama_cpps_cache_types(qwen_gguf):
    ran = kinetic("run", str(qwen_gguf), PROMPT, "--temp", "0", "-n", "12", "--device", "cpu", "-ctk", "q8_0",
                  "--cache-type-v", "q8_0")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == engines_greedy_answer(qwen_gguf, ("q8_0", "q8_0"))


def test_run_reads_the_prompt_from_stdin_and_takes_llama_flags(greedy_answer, qwen_gguf):
    piped = kinetic("run", "-m", str(qwen_gguf), "--temp", "0", "-n", "12", "-ngl", "0", "-fa", "on", stdin=PROMPT)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == greedy_answer.stdout


def test_seeded_answers_repeat(qwen_gguf):
    args = ("run", str(qwen_gguf), PROMPT, "--temp", "0.9", "--seed", "42", "-n", "10", "--device", "cpu")
    first, second = kinetic(*args), kinetic(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and first.stdout.strip()


def test_chat_reads_messages_from_stdin(qwen_gguf, greedy_answer):
    chat = kinetic("chat", str(qwen_gguf), "--temp", "0", "-n", "12", "--device", "cpu", stdin=f"{PROMPT}\n/exit\n")
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout == greedy_answer.stdout


def test_run_failures(tmp_path, qwen_gguf):
    missing = kinetic("run", str(tmp_path / "none.gguf"), "Hi")
    assert (missing.returncode, missing.stderr) == (1, f"kinetic: {tmp_path / 'none.gguf'}: no such file; check the path\n")
    cuda = kinetic("run", str(qwen_gguf), "Hi", "--device", "cuda")
    assert cuda.returncode == 1 and cuda.stderr.startswith("kinetic: CUDA is not usable: ")  # no GPU here
    assert cuda.stderr.count("\n") == 1


def test_a_prompt_past_the_context_is_one_line(qwen_gguf):
    done = kinetic("run", str(qwen_gguf), PROMPT, "-c", "8", "--device", "cpu")
    assert done.returncode == 1 and done.stdout == ""
    assert re.fullmatch(r"kinetic: the prompt is \d+ tokens, more than the context of 8; use a larger -c or a "
                        r"shorter prompt\n", done.stderr), done.stderr


def test_run_takes_llama_cpps_grammar_and_schema_flags(qwen_gguf, tmp_path):
    schema = tmp_path / "city.json"
    schema.write_text('{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}')
    ran = kinetic("run", str(qwen_gguf), "The capital of France, as JSON.", "--temp", "0", "-n", "40",
                  "--json-schema-file", str(schema))
    assert ran.returncode == 0, ran.stderr
    assert isinstance(json.loads(ran.stdout)["city"], str)
    ran = kinetic("run", str(qwen_gguf), "Name a colour.", "--temp", "0", "--grammar", 'root ::= "red" | "blue"')
    assert ran.returncode == 0 and ran.stdout.strip() in ("red", "blue"), ran.stderr
    bad = kinetic("run", str(qwen_gguf), "x", "--grammar", "root ::= item")
    assert bad.returncode == 1 and bad.stderr.strip() == "kinetic: the grammar is not valid GBNF: Rule 'item' not found"
    both = kinetic("run", str(qwen_gguf), "x", "--grammar", 'root ::= "a"', "-j", "{}")
    assert both.returncode == 2 and "give one of --grammar" in both.stderr
