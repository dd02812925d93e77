"""Ollama's routes through the app with raw HTTP: refusals in Ollama's shape and status, answers to requests
that only load the model, thinking as message.thinking, and the pieces show and the answers are made of."""

from __future__ import annotations

import json

import pytest
from falcon import testing

from kinetic.cli.serve import listen_port
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app
from kinetic.server.ollama.described import human_number, rfc3339, shown_value

from test_server_reasoning import THINKING_TEMPLATE

HI = [{"role": "user", "content": "Say hi."}]


@pytest.fixture(scope="module")
def client(qwen_gguf) -> testing.TestClient:
    session = Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=256), announce=lambda line: None)
    return testing.TestClient(make_app(ServedModel(session, name="coder")), headers={"Host": "localhost"})


@pytest.fixture(scope="module")
def thinker(qwen_gguf, tmp_path_factory) -> testing.TestClient:
    template = tmp_path_factory.mktemp("ollama-thinking") / "thinking.jinja"
    template.write_text(THINKING_TEMPLATE)
    options = SessionOptions(device="cpu", ctx_size=256, chat_template_file=template)
    session = Session(qwen_gguf, options, announce=lambda line: None)
    return testing.TestClient(make_app(ServedModel(session, name="thinker")), headers={"Host": "localhost"})


@pytest.mark.parametrize("path, body, status, error", [
    ("/api/chat", {"model": "llama3.2", "messages": HI}, 404, "model 'llama3.2' not found"),
    ("/api/generate", {"model": "coder:7b", "prompt": "x"}, 404, "model 'coder:7b' not found"),
    ("/api/show", {"model": "other"}, 404, "model 'other' not found"),
    ("/api/chat", {"messages": HI}, 400, "model is required"),
    ("/api/generate", {"model": "coder", "prompt": "x", "suffix": "y"}, 400,
     "suffix (fill in the middle) is not supported on /api/generate; send the text before the gap as prompt"),
    ("/api/generate", {"model": "coder", "prompt": "x", "template": "{{ .Prompt }}"}, 400,
     "template is not supported: the model's chat template (or --chat-template-file) formats the prompt; send "
     "raw: true with a prompt you formatted yourself"),
    ("/api/generate", {"model": "coder", "prompt": "x", "context": [1, 2]}, 400,
     "context is not supported: send the conversation as messages to /api/chat"),
    ("/api/generate", {"model": "coder", "prompt": "x", "raw": True, "system": "s"}, 400,
     "raw mode does not take system: write it into the prompt"),
    ("/api/generate", {"model": "coder", "prompt": "x", "images": ["aGk="]}, 400,
     "this model reads only text; images need a vision model"),
    ("/api/chat", {"model": "coder", "messages": [{**HI[0], "images": ["aGk="]}]}, 400,
     "this model reads only text; images need a vision model"),
    ("/api/chat", {"model": "coder", "messages": HI, "think": True}, 400, '"coder" does not support thinking'),
    ("/api/chat", {"model": "coder", "messages": HI, "think": "very"}, 400,
     "invalid think value: 'very' (must be \"high\", \"medium\", \"low\", \"max\", true, or false)"),
    ("/api/chat", {"model": "coder", "messages": HI, "format": "xml"}, 400,
     "invalid format: 'xml'; expected \"json\" or a valid JSON Schema object"),
    ("/api/chat", {"model": "coder", "messages": HI, "keep_alive": "soon"}, 400,
     "keep_alive must be a number of seconds or a duration such as \"5m\", not 'soon'"),
    ("/api/chat", {"model": "coder", "messages": HI, "options": {"temprature": 0}}, 400,
     "unknown option 'temprature'; options takes Ollama's names, such as temperature, top_k, top_p, num_predict "
     "and stop"),
    ("/api/chat", {"model": "coder", "messages": HI, "options": {"temperature": "hot"}}, 400,
     "temperature must be a number, not a string"),
    ("/api/chat", {"model": "coder", "messages": "hi"}, 400, "messages must be a list of messages, not a string"),
    ("/api/embed", {"model": "coder", "input": "hi"}, 400,
     "coder is a text model and /api/embed needs an embedding model; use /api/chat or /api/generate"),
    ("/api/embeddings", {"model": "coder", "prompt": "hi"}, 400,
     "coder is a text model and /api/embeddings needs an embedding model; use /api/chat or /api/generate"),
])
def test_refusals_in_ollamas_shape(client, path, body, status, error):
    result = client.simulate_post(path, json=body)
    assert (result.status_code, result.json) == (status, {"error": error})


@pytest.mark.parametrize("path, kwargs, status", [
    ("/api/chat", {"body": "{not json"}, 400),
    ("/api/nothing", {"json": {}}, 404),
])
def test_malformed_requests_and_unknown_routes_get_ollamas_shape(client, path, kwargs, status):
    result = client.simulate_post(path, **kwargs)
    assert result.status_code == status and list(result.json) == ["error"] and isinstance(result.json["error"], str)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_bodies_of_any_content_type_are_read(client, content_type):
    """Ollama's clients do not all say their body is JSON, and Ollama reads it all the same."""
    headers = {"Content-Type": content_type} if content_type else {}
    result = client.simulate_post("/api/show", body=json.dumps({"model": "coder"}), headers=headers)
    assert result.status_code == 200 and result.json["details"]["family"] == "qwen2"


@pytest.mark.parametrize("path, method", [("/", "GET"), ("/", "HEAD"), ("/api/version", "HEAD"), ("/api/tags", "HEAD")])
def test_heartbeat_and_head_requests(client, path, method):
    assert client.simulate_request(method, path).status_code == 200


def test_a_page_of_another_site_is_refused(client):
    result = client.simulate_post("/api/chat", json={"model": "coder", "messages": HI},
                                  headers={"Origin": "https://example.com"})
    assert result.status_code == 403 and list(result.json) == ["error"]


@pytest.mark.parametrize("path, body, text", [
    ("/api/chat", {"model": "coder", "messages": []}, {"message": {"role": "assistant", "content": ""}}),
    ("/api/chat", {"model": "coder", "keep_alive": 0}, {"message": {"role": "assistant", "content": ""}}),
    ("/api/generate", {"model": "coder"}, {"response": ""}),
    ("/api/generate", {"model": "coder:latest", "keep_alive": "10m"}, {"response": ""}),
])
def test_no_prompt_loads_the_model_which_is_loaded(client, path, body, text):
    answer = client.simulate_post(path, json=body).json
    assert answer.pop("created_at").endswith("Z")
    assert answer == {"model": body["model"], **text, "done": True, "done_reason": "load"}


def test_stream_is_ndjson_and_options_reach_the_sampler(client):
    body = {"model": "coder", "messages": HI, "options": {"temperature": 0, "num_predict": 5, "num_ctx": 4096}}
    result = client.simulate_post("/api/chat", json=body)
    assert result.headers["content-type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in result.text.splitlines()]
    assert lines[-1]["done"] and lines[-1]["eval_count"] == 5 and lines[-1]["done_reason"] == "length"
    whole = client.simulate_post("/api/chat", json={**body, "stream": False}).json
    assert "".join(line["message"]["content"] for line in lines) == whole["message"]["content"]
    stopped = client.simulate_post("/api/chat", json={**body, "stream": False, "options": {
        "temperature": 0, "num_predict": 20, "stop": [whole["message"]["content"][-2:]]}}).json
    assert stopped["done_reason"] == "stop" and stopped["eval_count"] <= 5


def test_logprobs_come_per_token(client):
    body = {"model": "coder", "messages": HI, "options": {"temperature": 0, "num_predict": 3}, "stream": False,
            "logprobs": True, "top_logprobs": 2}
    answer = client.simulate_post("/api/chat", json=body).json
    assert len(answer["logprobs"]) == 3 and "".join(p["token"] for p in answer["logprobs"]) == answer["message"]["content"]
    assert all(len(p["top_logprobs"]) == 2 and p["logprob"] <= 0 for p in answer["logprobs"])


def test_thinking_comes_as_message_thinking(thinker):
    body = {"model": "thinker", "messages": HI, "options": {"temperature": 0, "num_predict": 6}, "stream": False}
    message = thinker.simulate_post("/api/chat", json=body).json["message"]
    assert message["thinking"] and message["content"] == ""  # the answer never left its <think>
    streamed = [json.loads(line) for line in thinker.simulate_post(
        "/api/chat", json={**body, "stream": True, "think": "high"}).text.splitlines()]
    assert "".join(line["message"].get("thinking", "") for line in streamed) == message["thinking"]
    off = thinker.simulate_post("/api/chat", json={**body, "think": False}).json["message"]
    assert "thinking" not in off and off["content"]
    generated = thinker.simulate_post("/api/generate", json={**body, "prompt": "Say hi."}).json
    assert generated["thinking"] == message["thinking"] and generated["response"] == ""
    assert thinker.simulate_post("/api/show", json={"model": "thinker"}).json["capabilities"] == [
        "completion", "thinking"]


@pytest.mark.parametrize("n, shown", [(8_030_261_248, "8.0B"), (8_000_000_000, "8B"), (1_543_714_304, "1.5B"),
                                      (494_032_768, "494.03M"), (630_167_424, "630.17M"), (12_345, "12K"), (999, "999")])
def test_parameter_size_as_ollama_writes_it(n, shown):
    assert human_number(n) == shown


@pytest.mark.parametrize("nanoseconds, written", [(1_691_176_965_499_127_000, "2023-08-04T19:22:45.499127Z"),
                                                  (1_691_176_965_000_000_000, "2023-08-04T19:22:45Z"),
                                                  (1_691_176_965_000_000_001, "2023-08-04T19:22:45.000000001Z")])
def test_times_as_go_writes_them(nanoseconds, written):
    assert rfc3339(nanoseconds) == written


@pytest.mark.parametrize("value, verbose, shown", [
    (9.999999974752427e-07, False, 1e-06), (1000000.0, False, 1000000.0), (0.1, False, 0.1),
    (["a", "b"], False, ["a", "b"]), (list(range(6)), False, []), (list(range(6)), True, list(range(6))),
])
def test_model_info_values(value, verbose, shown):
    assert shown_value(value, verbose) == shown


@pytest.mark.parametrize("port, ollama, listened", [(None, False, 8080), (None, True, 11434), (9000, True, 9000),
                                                   (0, True, 0)])
def test_listen_port(port, ollama, listened):
    assert listen_port(port, ollama) == listened
