"""Thinking apart from the answer: the splitter on hand-made pieces, and reasoning_content through the app
with a chat template that opens <think> (streamed deltas add up to the whole message)."""

from __future__ import annotations

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app
from kinetic.server.reasoning import ReasoningSplit, thinking_start

THINKING_TEMPLATE = ("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                     "{% if add_generation_prompt %}assistant: {% if enable_thinking is not defined or "
                     "enable_thinking %}<think>\n{% endif %}{% endif %}")


def split(thinking: bool, pieces: list[str]) -> tuple[str, str]:
    splitter = ReasoningSplit(thinking)
    parts = [splitter.feed(piece) for piece in pieces] + [splitter.finish()]
    return "".join(r for r, _ in parts), "".join(c for _, c in parts)


@pytest.mark.parametrize("thinking, pieces, expected", [
    (True, ["Let me", " add.</th", "ink>\n\n2 + 2", " = 4"], ("Let me add.", "2 + 2 = 4")),
    (False, ["<th", "ink>hmm</think>", "\nYes"], ("hmm", "Yes")),
    (False, ["  ", "<think>deep</think>ok"], ("deep", "ok")),
    (False, ["Hello <think>x</think>"], ("", "Hello <think>x</think>")),  # only a leading tag opens
    (True, ["no end <"], ("no end <", "")),
    (False, ["plain"], ("", "plain")),
])
def test_split(thinking, pieces, expected):
    assert split(thinking, pieces) == expected


def test_thinking_start():
    assert thinking_start("no tags here", "x<think>", {}) is None
    assert thinking_start("<think>", "assistant: <think>\n", {}) is True
    assert thinking_start("<think>", "a <think>b</think> assistant: ", {}) is False
    assert thinking_start("<think>", "assistant: <think>\n", {"enable_thinking": False}) is None


@pytest.fixture(scope="module")
def client(qwen_gguf, tmp_path_factory) -> testing.TestClient:
    template = tmp_path_factory.mktemp("reasoning") / "thinking.jinja"
    template.write_text(THINKING_TEMPLATE)
    options = SessionOptions(device="cpu", ctx_size=256, chat_template_file=template)
    session = Session(qwen_gguf, options, announce=lambda line: None)
    return testing.TestClient(make_app(ServedModel(session, name="thinker")), headers={"Host": "localhost"})


def test_reasoning_content_in_messages_and_deltas(client):
    body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 6, "temperature": 0}
    message = client.simulate_post("/v1/chat/completions", json=body).json["choices"][0]["message"]
    assert message["reasoning_content"] and message["content"] == ""  # the answer never left its <think>
    result = client.simulate_post("/v1/chat/completions", json={**body, "stream": True})
    events = [e[len("data: "):] for e in result.text.split("\n\n") if e.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [testing.helpers.json.loads(e) for e in events[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("reasoning_content", "") for d in deltas) == message["reasoning_content"]
    assert not any("content" in d and d["content"] for d in deltas)
    off = {**body, "chat_template_kwargs": {"enable_thinking": False}}
    plain = client.simulate_post("/v1/chat/completions", json=off).json["choices"][0]["message"]
    assert "reasoning_content" not in plain and plain["content"]
