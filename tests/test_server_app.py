"""The server app through falcon's testing client on the real Qwen model: routes, fields, errors, the guard."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import PromptError, PromptTooLong
from kinetic.sampling.settings import SamplingSettings
from kinetic.server import ServedModel, make_app
from kinetic.server.served import Job
from kinetic.server.stops import StopScanner

HI = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 3, "temperature": 0}
LOCAL = {"Host": "localhost:8080"}  # falcon's test requests are addressed to falconframework.org otherwise


@pytest.fixture(scope="module")
def served(qwen_gguf) -> ServedModel:
    return ServedModel(Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=256)), name="coder")


@pytest.fixture(scope="module")
def client(served) -> testing.TestClient:
    return testing.TestClient(make_app(served), headers=LOCAL)


def error_of(result, status: int) -> dict:
    assert result.status_code == status, result.text
    error = result.json["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


@pytest.mark.parametrize("change, param", [
    ({"n": 2}, "n"), ({"messages": []}, "messages"), ({"max_tokens": 0}, "max_tokens"),
    ({"max_completion_tokens": -1}, "max_completion_tokens"), ({"temperature": 101}, "temperature"),
    ({"top_p": 1.5}, "top_p"), ({"response_format": {"type": "yaml"}}, "response_format"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"), ({"temperature": "hot"}, "temperature"),
    ({"stream": "yes"}, "stream"), ({"logit_bias": {"5": "high"}}, "logit_bias"), ({"stop": [1]}, "stop"),
    ({"messages": "hello"}, "messages"), ({"messages": [{"role": "user", "content": 5}]}, "messages"),
])
def test_chat_refusals_are_400_naming_the_field(client, change, param):
    error = error_of(client.simulate_post("/v1/chat/completions", json={**HI, **change}), 400)
    assert (error["type"], error["param"]) == ("invalid_request_error", param)


def test_receipts_come_from_the_openai_routes(client):
    """"receipt": true adds one to /v1/chat/completions' and /v1/completions' answers (tests/test_receipts.py
    verifies them), a constrained answer's with its grammar; llama-server's /completion refuses it, naming what to
    do."""
    error = error_of(client.simulate_post("/completion", json={"prompt": "x", "receipt": True}), 400)
    assert error["param"] == "receipt" and "/v1/chat/completions and /v1/completions" in error["message"]
    for path, body in (("/v1/chat/completions", HI), ("/v1/completions", {"prompt": "x", "max_tokens": 3})):
        receipt = client.simulate_post(path, json={**body, "receipt": True}).json["receipt"]
        output = receipt["output"]["tokens"]
        assert output["count"] == len(output["ids"]) <= 3 and receipt["sampling"]["max_tokens"] == 3
    constrained = client.simulate_post("/v1/chat/completions", json={
        **HI, "receipt": True, "response_format": {"type": "json_object"}}).json["receipt"]
    assert constrained["sampling"]["grammar"]["kind"] == "JSON" and constrained["sampling"]["grammar"]["definition"]
    assert "receipt" not in client.simulate_post("/v1/chat/completions", json={**HI, "receipt": False}).json


@pytest.mark.parametrize("path, needs", [
    ("/v1/embeddings", "an embedding model"), ("/embeddings", "an embedding model"),
    ("/embedding", "an embedding model"), ("/v1/rerank", "a reranking model"),
    ("/v1/reranking", "a reranking model"), ("/rerank", "a reranking model"), ("/reranking", "a reranking model"),
])
def test_endpoints_for_other_kinds_of_model_are_400_naming_what_is_served(client, path, needs):
    error = error_of(client.simulate_post(path, json={"input": "hi", "query": "q", "documents": ["d"]}), 400)
    assert error["message"] == (f"coder is a text model and {path} needs {needs}; "
                                "use /v1/chat/completions or /v1/completions")


def test_malformed_bodies_and_prompts_past_the_context(client):
    for body in (b'{"messages": [', b"[1]", b'{"temperature": NaN}', b"\xff\xfe"):
        error_of(client.simulate_post("/v1/chat/completions", body=body,
                                      headers={"Content-Type": "application/json"}), 400)
    long = {**HI, "messages": [{"role": "user", "content": "word " * 400}]}
    assert "more than the context of 256" in error_of(client.simulate_post("/v1/chat/completions", json=long),
                                                      400)["message"]
    huge = client.simulate_post("/v1/completions", body=b"x", headers={"Content-Type": "application/json",
                                                                       "Content-Length": str(64 << 20)})
    error_of(huge, 413)


def test_the_engine_checks_a_prompt_once_before_any_work_and_the_server_words_it(client, served):
    session, greedy = served.session, SamplingSettings(temp=0)
    seq = session.new_sequence()
    with pytest.raises(PromptTooLong) as long:
        session.generate(seq, [1] * 300, greedy, 3)
    assert str(long.value) == ("the prompt is 300 tokens, more than the context of 256; use a larger -c or a "
                               "shorter prompt")
    with pytest.raises(PromptError, match="token id 999999 is not in the model's vocabulary"):
        session.generate(seq, [1, 999999], greedy, 3)
    with pytest.raises(PromptError, match="the prompt is empty"):
        session.generate(seq, [], greedy, 3)
    assert seq.n_tokens == 0
    words = {**HI, "messages": [{"role": "user", "content": "word " * 400}], "stream": True}
    error = error_of(client.simulate_post("/v1/chat/completions", json=words), 400)  # before the stream starts
    assert error["message"].endswith("more than the context of 256; start the server with a larger -c or send a "
                                      "shorter prompt")
    empty = error_of(client.simulate_post("/v1/completions", json={"prompt": ""}), 400)
    assert (empty["message"], empty["param"]) == ("the prompt is empty", "prompt")


def test_statuses_404_405_415(client):
    assert error_of(client.simulate_get("/v2/nothing"), 404)["type"] == "not_found_error"
    error_of(client.simulate_get("/v1/chat/completions"), 405)
    form = client.simulate_post("/v1/chat/completions", body="a=1",
                                headers={"Content-Type": "application/x-www-form-urlencoded"})
    error_of(form, 415)
    # llama-server's routes take any content type
    assert client.simulate_post("/tokenize", body='{"content": "hi"}').status_code == 200


def test_browser_origins_of_other_sites_are_refused(client):
    error_of(client.simulate_get("/v1/models", headers={"Origin": "https://example.com"}), 403)
    error_of(client.simulate_get("/v1/models", headers={"Origin": "null"}), 403)
    for local in ("http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:5173"):
        result = client.simulate_get("/v1/models", headers={"Origin": local})
        assert result.status_code == 200 and "Access-Control-Allow-Origin" not in result.headers


def test_requests_addressed_to_other_names_are_refused_without_a_key(client, served):
    rebound = {"Host": "evil.com:8080", "Origin": "http://evil.com:8080"}  # a page whose name now means 127.0.0.1
    error = error_of(client.simulate_get("/v1/models", headers=rebound), 403)
    assert error["type"] == "permission_error" and "--allowed-hosts" in error["message"]
    error_of(client.simulate_post("/v1/chat/completions", json=HI, headers=rebound), 403)
    for local in ("localhost:8080", "127.0.0.1:8080", "127.0.0.2", "[::1]:8080", "LOCALHOST"):
        assert client.simulate_get("/v1/models", headers={"Host": local}).status_code == 200, local
    allowed = testing.TestClient(make_app(served, allowed_hosts=("192.168.1.5", "box.lan")))
    assert allowed.simulate_get("/v1/models", headers={"Host": "box.lan:8080"}).status_code == 200
    assert allowed.simulate_get("/v1/models", headers={"Host": "192.168.1.5:8080"}).status_code == 200
    error_of(allowed.simulate_get("/v1/models", headers={"Host": "evil.com"}), 403)
    keyed = testing.TestClient(make_app(served, api_key="sekrit"))  # the key guards it: any name is answered
    assert keyed.simulate_get("/v1/models", headers={"Host": "evil.com:8080", "X-Api-Key": "sekrit"}).status_code == 200


def test_the_wsgi_entry_point_answers_the_names_of_kinetic_allowed_hosts(qwen_gguf, monkeypatch):
    for name, value in (("KINETIC_MODEL", str(qwen_gguf)), ("KINETIC_CTX_SIZE", "256"), ("KINETIC_DEVICE", "cpu"),
                        ("KINETIC_ALLOWED_HOSTS", "box.lan, other.lan")):
        monkeypatch.setenv(name, value)
    monkeypatch.delitem(sys.modules, "kinetic.server.wsgi", raising=False)
    from kinetic.server.wsgi import app

    client = testing.TestClient(app)
    for host, status in (("box.lan", 200), ("other.lan:8080", 200), ("evil.com", 403), ("localhost", 200)):
        assert client.simulate_get("/v1/models", headers={"Host": host}).status_code == status, host


def test_api_key_on_every_route_but_health(served):
    client = testing.TestClient(make_app(served, api_key="sekrit"))
    assert error_of(client.simulate_get("/v1/models"), 401)["type"] == "authentication_error"
    error_of(client.simulate_get("/metrics", headers={"Authorization": "Bearer wrong"}), 401)
    assert client.simulate_get("/v1/models", headers={"Authorization": "Bearer sekrit"}).status_code == 200
    assert client.simulate_get("/slots", headers={"X-Api-Key": "sekrit"}).status_code == 200
    assert client.simulate_get("/health").json["status"] == "ok"
    assert client.simulate_get("/v1/health").status_code == 200


def test_past_the_open_limit_is_a_503_until_a_stream_ends(served):
    app = make_app(served, max_open=1)
    environ = testing.create_environ("/v1/chat/completions", method="POST",
                                     headers={**LOCAL, "Content-Type": "application/json"},
                                     body=testing.helpers.json.dumps({**HI, "stream": True}))
    stream = app(environ, lambda status, headers: None)  # open until it is closed
    busy = testing.TestClient(app, headers=LOCAL).simulate_get("/v1/models")
    assert busy.status_code == 503 and busy.json["error"]["type"] == "server_busy_error"
    stream.close()  # the client left before reading a byte: nothing was generated
    assert testing.TestClient(app, headers=LOCAL).simulate_get("/v1/models").status_code == 200


def test_models_health_props_slots_metrics(client):
    model = client.simulate_get("/v1/models").json["data"][0]
    assert (model["id"], model["context_length"], model["owned_by"]) == ("coder", 256, "kinetic")
    assert client.simulate_get("/models").json["data"][0]["id"] == "coder"
    assert client.simulate_get("/v1/health").json == {"status": "ok", "slots_idle": 1, "slots_processing": 0}
    props = client.simulate_get("/props").json
    assert props["default_generation_settings"]["n_ctx"] == 256 and "im_start" in props["chat_template"]
    assert client.simulate_get("/slots").json[0]["n_ctx"] == 256
    metrics = client.simulate_get("/metrics")
    assert metrics.headers["Content-Type"].startswith("text/plain")
    for name in ("requests_total", "prompt_tokens_total", "tokens_predicted_total", "requests_deferred"):
        assert f"\nllamacpp:{name} " in metrics.text


def test_tokenize_and_detokenize_round_trip(client, served):
    result = client.simulate_post("/tokenize", json={"content": "Hello world", "with_pieces": True}).json
    assert [p["piece"] for p in result["tokens"]] == ["Hello", " world"]
    ids = [p["id"] for p in result["tokens"]]
    assert ids == served.session.tokenizer.encode("Hello world", add_special=False)
    assert client.simulate_post("/detokenize", json={"tokens": ids}).json == {"content": "Hello world"}
    error_of(client.simulate_post("/detokenize", json={"tokens": [10**9]}), 400)


def test_greedy_chat_is_the_engines_answer_and_reuses_the_cache(client, served):
    session = served.session
    prompt = session.chat_prompt(HI["messages"])
    alone = Session(session.path, SessionOptions(device="cpu", ctx_size=256))
    expected = list(alone.generate(alone.new_sequence(), prompt, SamplingSettings(temp=0), 3))
    first = client.simulate_post("/v1/chat/completions", json=HI).json
    second = client.simulate_post("/v1/chat/completions", json=HI).json
    assert first["choices"][0]["message"] == {"role": "assistant",
                                              "content": session.tokenizer.decode(expected, special=False)}
    assert second["choices"] == first["choices"] and first["choices"][0]["finish_reason"] == "length"
    assert second["usage"] == {"prompt_tokens": len(prompt), "completion_tokens": 3,
                               "total_tokens": len(prompt) + 3,
                               "prompt_tokens_details": {"cached_tokens": len(prompt) - 1}}
    recomputed = client.simulate_post("/v1/chat/completions", json={**HI, "cache_prompt": False}).json
    assert recomputed["choices"] == first["choices"]
    assert recomputed["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_the_servers_warm_up_leaves_no_trace(qwen_gguf):
    session = Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=256, off=["warm-start"]))
    prompt, greedy = session.chat_prompt(HI["messages"]), SamplingSettings(temp=0)
    seq = session.new_sequence()
    session.warm_up(seq)
    assert seq.n_tokens == 0
    assert list(session.generate(seq, prompt, greedy, 8)) == list(session.generate(session.new_sequence(), prompt,
                                                                                    greedy, 8))


def test_chat_logprobs_are_the_raw_logits(client, served):
    body = {**HI, "max_tokens": 1, "logprobs": True, "top_logprobs": 3}
    entry = client.simulate_post("/v1/chat/completions", json=body).json["choices"][0]["logprobs"]["content"][0]
    session = served.session
    seq = session.new_sequence()
    from kinetic.engine.generate import feed
    logits = feed(session.runner, seq, session.chat_prompt(HI["messages"])).astype(np.float64)
    log_probs = logits - logits.max() - math.log(np.exp(logits - logits.max()).sum())
    best = np.argsort(-log_probs, kind="stable")[:3]
    assert [t["token"] for t in entry["top_logprobs"]] == [session.tokenizer.decode([int(b)]) for b in best]
    assert entry["logprob"] == pytest.approx(log_probs[best[0]], abs=1e-9)
    assert entry["bytes"] == list(entry["token"].encode())


def test_stream_chunks_usage_and_done(client):
    body = {**HI, "stream": True, "stream_options": {"include_usage": True}, "logprobs": True}
    result = client.simulate_post("/v1/chat/completions", json=body)
    assert result.headers["Content-Type"] == "text/event-stream"
    events = [line[len("data: "):] for line in result.text.split("\n\n") if line]
    assert events[-1] == "[DONE]"
    chunks = [testing.helpers.json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    texts = [c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"]]
    assert all(c["choices"][0]["logprobs"]["content"] for c in chunks[1:4])
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1]["choices"] == []
    plain = client.simulate_post("/v1/chat/completions", json=HI).json
    assert "".join(texts) == plain["choices"][0]["message"]["content"]
    assert chunks[-1]["usage"]["completion_tokens"] == 3


def test_completions_stop_strings_and_legacy_logprobs(client):
    body = {"prompt": "def add(a, b):", "max_tokens": 12, "temperature": 0, "logprobs": 2}
    full = client.simulate_post("/v1/completions", json=body).json["choices"][0]
    logprobs = full["logprobs"]
    assert full["text"] == "".join(logprobs["tokens"]) and len(logprobs["top_logprobs"][0]) == 2
    assert logprobs["text_offset"][1] == len(logprobs["tokens"][0])
    stop = full["text"].strip().split()[0]  # the answer's first word
    cut = client.simulate_post("/v1/completions", json={**body, "stop": [stop]}).json["choices"][0]
    assert cut["finish_reason"] == "stop" and cut["text"] == full["text"][: full["text"].index(stop)]
    llama = client.simulate_post("/completion", json={"prompt": "def add(a, b):", "n_predict": 12,
                                                      "temperature": 0}).json
    assert llama["content"] == full["text"] and llama["stop_type"] == "limit"


def test_a_client_that_leaves_stops_its_generation(served):
    gone = []
    prompt = served.session.chat_prompt(HI["messages"])
    run = served.run(Job(prompt, {"temp": 0}, max_tokens=50), cancelled=lambda: len(gone) >= 2)
    for piece in run:
        gone.append(piece)
    assert len(gone) == 2 and run.finish_reason is None and run.usage.completion_tokens == 2
    assert not served.pool.busy and served.pool.waiting == 0


def test_stop_scanner_holds_back_what_may_start_a_stop():
    scanner = StopScanner(["\n\n", "END"])
    assert [scanner.feed(t) for t in ("ab", "c\n", "x", "E", "N", "D!")] == ["ab", "c", "\nx", "", "", ""]
    assert scanner.found == "END" and scanner.finish() == ""
    open_end = StopScanner(["END"])
    assert open_end.feed("xE") == "x" and open_end.finish() == "E"


def test_logit_bias_takes_llama_servers_forms_too(client, served):
    """OpenAI's {"id": bias}, and llama-server's [[id or text, bias]] pairs, text keys and false: each bans the
    token greedy decoding would pick first, so another comes."""
    body = {"prompt": "The capital of France is", "max_tokens": 1, "temperature": 0}
    first = client.simulate_post("/v1/completions", json=body).json["choices"][0]["text"]
    (token,) = served.session.tokenizer.encode(first, add_special=False)
    for bias in ({str(token): -100}, [[token, False]], [[first, -100]], {first: False}):
        answer = client.simulate_post("/v1/completions", json={**body, "logit_bias": bias})
        assert answer.status_code == 200 and answer.json["choices"][0]["text"] != first, bias
    for bad in ([[token]], {str(token): True}, "ban", [[[token], -1]]):
        error_of(client.simulate_post("/v1/completions", json={**body, "logit_bias": bad}), 400)
