"""`kinetic serve` on 127.0.0.1 with the real Qwen model, used through the official openai package."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

PROMPT = "Name one river."
ABUSE = Path(__file__).resolve().parent.parent / "scripts" / "server_abuse.py"  # run as a user runs it


def test_models_and_a_greedy_chat_equal_to_kinetic_run(openai_client, qwen_gguf):
    [model] = openai_client.models.list().data
    assert model.id == "coder" and model.model_extra["context_length"] == 1024
    chat = openai_client.chat.completions.create(model="coder", messages=[{"role": "user", "content": PROMPT}],
                                          max_tokens=6, temperature=0)
    run = subprocess.run([sys.executable, "-m", "kinetic", "run", str(qwen_gguf), PROMPT, "--temp", "0", "-n", "6",
                          "--device", "cpu"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert chat.choices[0].message.content + "\n" == run.stdout
    assert chat.choices[0].finish_reason == "length" and chat.usage.completion_tokens == 6
    assert chat.usage.prompt_tokens_details.cached_tokens == 0


def test_streamed_chat_with_logprobs_and_usage(openai_client):
    stream = openai_client.chat.completions.create(model="coder", messages=[{"role": "user", "content": PROMPT}],
                                            max_tokens=6, temperature=0, stream=True, logprobs=True,
                                            top_logprobs=2, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    scored = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert len(scored) == 6 and all(len(t.top_logprobs) == 2 and t.logprob <= 0 for t in scored)
    assert chunks[-1].usage.completion_tokens == 6 and chunks[-1].usage.prompt_tokens_details.cached_tokens > 0
    plain = openai_client.chat.completions.create(model="coder", messages=[{"role": "user", "content": PROMPT}],
                                           max_tokens=6, temperature=0)
    assert text == plain.choices[0].message.content


def test_completions_plain_and_streamed(openai_client):
    plain = openai_client.completions.create(model="coder", prompt="def add(a, b):", max_tokens=5, temperature=0,
                                      logprobs=1)
    streamed = openai_client.completions.create(model="coder", prompt="def add(a, b):", max_tokens=5, temperature=0,
                                         stream=True)
    assert "".join(c.choices[0].text for c in streamed) == plain.choices[0].text
    assert "".join(plain.choices[0].logprobs.tokens) == plain.choices[0].text
    with pytest.raises(Exception) as refused:
        openai_client.completions.create(model="coder", prompt="x", max_tokens=0)
    assert getattr(refused.value, "status_code", None) == 400


def test_abuse_then_still_answers_then_ctrl_c_stops_it(live_server):
    proc, url = live_server
    assert subprocess.run([sys.executable, str(ABUSE), "--quick", "--url", url.removesuffix("/v1")]).returncode == 0
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0


def test_a_port_in_use_is_one_line_and_exit_1(qwen_gguf):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "kinetic", "serve", str(qwen_gguf), "--port", str(port),
                               "-c", "256", "--device", "cpu"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"kinetic: port {port} is in use on 127.0.0.1; pick another with --port "
                           "(--port 0 picks a free one)\n")
