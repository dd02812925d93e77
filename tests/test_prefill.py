"""Zero Wait: /v1/prefill runs a conversation ahead while its last message is written; the answer that follows
is the answer without it, and only the rest runs."""

from __future__ import annotations

import time

import pytest
from falcon import testing

from kinetic.cli.chat import Conversation
from kinetic.cli.run_ahead import RunAhead
from kinetic.engine.options import SessionOptions
from kinetic.engine.prefill import Prefill, ahead_end
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app
from kinetic.testing.gguf_factory import write_comparable_model

DOCUMENT = "Report. " + " ".join(f"Section {i}: the river rose {i} cm on day {i}." for i in range(70))
QUESTION = "What does section 12 say?"
LOCAL = {"Host": "localhost"}


@pytest.fixture(scope="module")
def session(qwen_gguf) -> Session:
    return Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=2048, off=("warm-start",)))


@pytest.fixture(scope="module", params=["qwen", "lfm2", "granitehybrid", "falcon-h1", "qwen35"])
def any_session(request, tmp_path_factory) -> Session:
    """Qwen, or a random-weight file with a vocabulary of characters: LFM2 (short convolutions), Granite 4.0 H
    (Mamba-2 states, which the prefill leaves kept at the grid)."""
    if request.param == "qwen":
        return request.getfixturevalue("session")
    path = write_comparable_model(tmp_path_factory.mktemp("hybrid") / "m.gguf", request.param, "Q8_0",
                                  {"tokenizer.chat_template": "{% for m in messages %}{{ m.content }}\n{% endfor %}"})
    return Session(path, SessionOptions(device="cpu", ctx_size=4096, off=("warm-start",)))


def client(session: Session) -> testing.TestClient:
    return testing.TestClient(make_app(ServedModel(session, parallel=2)), headers=LOCAL)


def ask(client: testing.TestClient, route: str, text: str, **fields) -> dict:
    result = client.simulate_post(route, json={"messages": [{"role": "user", "content": text}], **fields})
    assert result.status_code == 200, result.text
    return result.json


@pytest.mark.parametrize("settings", [{"temperature": 0}, {"temperature": 0.8, "seed": 3}], ids=["greedy", "seeded"])
def test_prefills_change_no_answer_and_the_request_runs_only_the_rest(any_session, settings):
    fresh, ahead = client(any_session), client(any_session)
    message = f"{DOCUMENT}\n\n{QUESTION}"
    wanted = ask(fresh, "/v1/chat/completions", message, max_tokens=12, **settings)
    typed = [ask(ahead, "/v1/prefill", message[:n]) for n in (len(DOCUMENT) // 2, len(DOCUMENT) + 9, len(message))]
    assert [t["object"] for t in typed] == ["prefill"] * 3
    assert typed[-1]["cached_tokens"] >= 512 and typed[-1]["cached_tokens"] % 512 == 0
    got = ask(ahead, "/v1/chat/completions", message, max_tokens=12, **settings)
    assert got["choices"] == wanted["choices"]
    assert got["usage"]["prompt_tokens_details"]["cached_tokens"] >= typed[-1]["cached_tokens"]


def test_a_short_message_runs_nothing_ahead(session):
    assert ask(client(session), "/v1/prefill", "Hi there")["cached_tokens"] == 0


def test_a_run_ahead_gives_way_after_every_batch(session):
    seq = session.new_sequence()
    tokens = list(range(100, 1400))
    asked = []
    run = Prefill(seq, tokens, 0, ahead_end(0, 1300), lambda: len(asked) >= 2 or asked.append(1))
    passes = list(run.steps())
    assert [len(p.rows) for p in passes] == [512, 512]
    assert ahead_end(0, 1300) == 1024 and ahead_end(700, 1300) == 1024 and ahead_end(700, 900) == 700


def test_with_zero_wait_off_nothing_runs_ahead(qwen_gguf):
    session = Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=2048, off=("warm-start", "zero-wait")))
    assert ask(client(session), "/v1/prefill", f"{DOCUMENT}\n\n{QUESTION}") == {"object": "prefill", "cached_tokens": 0}


def test_kinetic_chat_runs_the_message_ahead_while_it_is_typed(session, capsys):
    """RunAhead, as kinetic chat's terminal drives it: edits come in, the answer after Enter is the same."""
    options = {"n_predict": 8, "temp": 0, "seed": None, "grammar": None, "grammar_file": None, "json_schema": None,
               "json_schema_file": None}
    message = f"{DOCUMENT}\n\n{QUESTION}"
    fresh = Conversation(session, dict(options), None, None)
    fresh.say(message)
    typing = Conversation(session, dict(options), None, None)
    ahead = RunAhead(typing)
    for n in (100, len(DOCUMENT) // 2, len(message) - 3):
        ahead.typed(message[:n])
    deadline = time.monotonic() + 120
    while len(typing.cached) < 1024 and time.monotonic() < deadline:
        time.sleep(0.1)
    ahead.hold()
    assert len(typing.cached) == 1024  # two whole batches of the grid ran ahead
    typing.say(message)
    assert typing.messages == fresh.messages
