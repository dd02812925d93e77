"""examples/ray_serve.py as its users run it: two replicas of the real Qwen model behind Ray Serve on this machine.
Greedy and seeded answers, whole and streamed, are those of one Kinetic server (exactness across processes), and
a conversation's next request reaches the replica holding its start (its cached_tokens cover the last prompt)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app

pytest.importorskip("ray.serve")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "ray_serve.py"
CONTEXT, THREADS = 1024, 1
STARTS_WITHIN = 300  # seconds: Ray starts, then each replica loads the model
ASKED = [
    {"messages": [{"role": "user", "content": "Write a haiku about rivers."}], "max_tokens": 24, "temperature": 0},
    {"messages": [{"role": "user", "content": "Name three colours."}], "max_tokens": 24, "temperature": 0.8,
     "seed": 42},
    {"prompt": "def fibonacci(n):", "max_tokens": 24, "temperature": 0.7, "seed": 7},
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(qwen_gguf):
    """The example's address while it runs; stopped with Ctrl+C as its user stops it."""
    port = free_port()
    command = [sys.executable, str(EXAMPLE), str(qwen_gguf), "--replicas", "2", "--port", str(port),
               "-c", str(CONTEXT), "-t", str(THREADS)]
    running = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    ready = threading.Event()

    def read() -> None:
        for line in running.stdout:
            lines.append(line)
            if line.startswith("Serving "):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(STARTS_WITHIN), "".join(lines[-40:])
        yield f"http://127.0.0.1:{port}"
    finally:
        running.send_signal(signal.SIGINT)
        try:
            running.wait(60)
        except subprocess.TimeoutExpired:
            running.kill()
            running.wait()


@pytest.fixture(scope="module")
def alone(qwen_gguf) -> testing.TestClient:
    """One Kinetic server on the same file and settings, in this process."""
    served = ServedModel(Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=CONTEXT, threads=THREADS)))
    return testing.TestClient(make_app(served), headers={"Host": "localhost"})


def post(base: str, path: str, body: dict) -> bytes:
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return answer.read()


def route(body: dict) -> str:
    return "/v1/chat/completions" if "messages" in body else "/v1/completions"


def text_of(answer: dict) -> str:
    choice = answer["choices"][0]
    return choice["message"]["content"] if "message" in choice else choice["text"]


def streamed_text(events: bytes) -> str:
    chunks = [json.loads(line[6:]) for line in events.decode().splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    assert events.decode().rstrip().endswith("data: [DONE]")
    return "".join(c["choices"][0].get("delta", {}).get("content") or c["choices"][0].get("text") or ""
                   for c in chunks if c["choices"])


@pytest.mark.parametrize("body", ASKED, ids=["greedy-chat", "seeded-chat", "seeded-completion"])
def test_answers_are_those_of_one_server(cluster, alone, body):
    wanted = text_of(alone.simulate_post(route(body), json=body).json)
    assert wanted
    assert text_of(json.loads(post(cluster, route(body), body))) == wanted
    assert streamed_text(post(cluster, route(body), {**body, "stream": True})) == wanted


def test_a_conversation_returns_to_the_replica_holding_its_start(cluster):
    """Each replica keeps its own prompt states, so cached tokens covering the earlier prompt show that the
    follow-up reached the same replica; with a random pick, all four would land there one time in sixteen."""
    for n in range(4):
        messages = [{"role": "system", "content": f"You are assistant number {n}. Answer in one short line. " * 4},
                    {"role": "user", "content": "Name a river."}]
        first = json.loads(post(cluster, "/v1/chat/completions", {"messages": messages, "max_tokens": 8,
                                                                   "temperature": 0}))
        messages += [first["choices"][0]["message"], {"role": "user", "content": "And a mountain?"}]
        then = json.loads(post(cluster, "/v1/chat/completions", {"messages": messages, "max_tokens": 8,
                                                                  "temperature": 0}))
        assert then["usage"]["prompt_tokens_details"]["cached_tokens"] >= first["usage"]["prompt_tokens"], n


def test_errors_come_through_with_their_status(cluster):
    with pytest.raises(urllib.error.HTTPError) as refused:
        post(cluster, "/v1/chat/completions", {"messages": [], "max_tokens": 4})
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"]["param"] == "messages"
