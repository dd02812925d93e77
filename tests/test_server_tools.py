"""Tools on /v1/chat/completions with the real models: Qwen2.5-Coder's own template (Hermes' <tool_call>
format) and Gemma with a template that knows nothing of tool use (llama.cpp's generic JSON format)."""

from __future__ import annotations

import json

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
LOCAL = {"Host": "localhost:8080"}
FORMATS = {"qwen": "Hermes 2 Pro", "gemma": "Generic"}
NAMED = {"type": "function", "function": {"name": "get_time"}}


@pytest.fixture(scope="module", params=["qwen", "gemma"])
def clients(request, llama_cpp_source) -> tuple[str, testing.TestClient, testing.TestClient]:
    """(model, a client of the model with RAD-1 drafting, one without); Gemma's file has no chat template: it
    gets llama.cpp's Gemma 2 template, which renders no tools."""
    template = None if request.param == "qwen" else llama_cpp_source / "models/templates/google-gemma-2-2b-it.jinja"
    path = request.getfixturevalue(f"{request.param}_gguf")

    def client(off: tuple[str, ...]) -> testing.TestClient:
        options = SessionOptions(device="cpu", ctx_size=1024, off=off, chat_template_file=template)
        return testing.TestClient(make_app(ServedModel(Session(path, options), name="m")), headers=LOCAL)

    return request.param, client(("warm-start",)), client(("warm-start", "rad1"))


def chat(client: testing.TestClient, **fields) -> dict:
    body = {"messages": ASK, "tools": [WEATHER, TIME], "temperature": 0, "max_tokens": 80, **fields}
    result = client.simulate_post("/v1/chat/completions", json=body)
    assert result.status_code == 200, result.text
    return result.json["choices"][0]


def without_ids(choice: dict) -> dict:
    calls = choice["message"].get("tool_calls") or []
    return {**choice, "message": {**choice["message"], "tool_calls": [call["function"] for call in calls]}}


@pytest.mark.parametrize("settings", [{"temperature": 0}, {"temperature": 0.8, "seed": 5}], ids=["greedy", "seeded"])
@pytest.mark.parametrize("tool_choice, name", [("required", None), (NAMED, "get_time")], ids=["required", "named"])
def test_forced_calls_are_calls_and_drafting_changes_none(clients, settings, tool_choice, name):
    _, drafted, plain = clients
    choice = chat(plain, tool_choice=tool_choice, **settings)
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == (name or call["function"]["name"]) in ("get_weather", "get_time")
    schema = (WEATHER if call["function"]["name"] == "get_weather" else TIME)["function"]["parameters"]
    assert set(json.loads(call["function"]["arguments"])) == set(schema["required"])
    assert without_ids(chat(drafted, tool_choice=tool_choice, **settings)) == without_ids(choice)


def test_auto_answers_in_the_templates_format_and_props_name_it(clients):
    model, drafted, plain = clients
    choice = chat(plain, parallel_tool_calls=True)
    assert without_ids(chat(drafted, parallel_tool_calls=True)) == without_ids(choice)
    if model == "qwen":  # Qwen2.5-Coder calls the tool; Gemma 270M may answer in words
        assert [call["function"]["name"] for call in choice["message"]["tool_calls"]] == ["get_weather"]
    props = plain.simulate_get("/props").json
    assert props["default_generation_settings"]["params"]["chat_format"] == FORMATS[model]
    assert props["chat_template_caps"]["supports_tool_calls"] == (model == "qwen")


def test_streamed_calls_leak_no_marker_and_equal_the_whole_answer(clients):
    _, _, plain = clients
    whole = chat(plain, tool_choice="required")
    result = plain.simulate_post("/v1/chat/completions", json={
        "messages": ASK, "tools": [WEATHER, TIME], "temperature": 0, "max_tokens": 80, "tool_choice": "required",
        "stream": True})
    events = [json.loads(line[6:]) for line in result.text.splitlines() if line.startswith("data: {")]
    deltas = [event["choices"][0]["delta"] for event in events]
    assert "".join(delta.get("content", "") for delta in deltas) == ""
    parts = [part for delta in deltas for part in delta.get("tool_calls", ())]
    assert parts[0]["function"]["arguments"] == "" and {"index", "id", "type"} <= set(parts[0])
    arguments = "".join(part["function"]["arguments"] for part in parts)
    [call] = whole["message"]["tool_calls"]
    assert (parts[0]["function"]["name"], arguments) == (call["function"]["name"], call["function"]["arguments"])
    assert events[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_tool_choice_none_hides_the_tools(clients):
    _, _, plain = clients
    ask = {"messages": ASK, "max_tokens": 1}
    hidden = plain.simulate_post("/v1/chat/completions", json={**ask, "tools": [WEATHER], "tool_choice": "none"})
    bare = plain.simulate_post("/v1/chat/completions", json=ask)
    assert hidden.json["usage"]["prompt_tokens"] == bare.json["usage"]["prompt_tokens"]


@pytest.mark.parametrize("fields, param, message", [
    ({"tools": {"type": "function"}}, "tools", "tools must be a list"),
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools", "name must be"),
    ({"tools": [{"type": "retrieval"}]}, "tools", "tools[0] must be"),
    ({"tools": [WEATHER, WEATHER]}, "tools", "more than once"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 7}}}]}, "tools",
     "tools[0].function.parameters is not a usable JSON schema"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice",
     "'nope', which is not one of the tools"),
    ({"tools": [WEATHER], "tool_choice": "always"}, "tool_choice", "tool_choice must be one of"),
    ({"tools": [WEATHER], "parallel_tool_calls": "yes"}, "parallel_tool_calls", "true or false"),
    ({"tools": [WEATHER], "tool_choice": "required", "response_format": {"type": "json_object"}},
     "response_format", "cannot be combined"),
    ({"tools": [WEATHER], "grammar": 'root ::= "a"'}, "grammar", "cannot be combined with a grammar"),
], ids=["not-a-list", "no-name", "not-a-function", "twice", "bad-parameters", "unknown-choice", "bad-choice",
        "bad-parallel", "forced-and-format", "grammar"])
def test_bad_tools_are_400_naming_the_field(clients, fields, param, message):
    _, _, plain = clients
    result = plain.simulate_post("/v1/chat/completions", json={"messages": ASK, **fields})
    assert result.status_code == 400, result.text
    assert result.json["error"]["param"] == param and message in result.json["error"]["message"]


def test_tools_need_the_chat_route(clients):
    _, _, plain = clients
    for route in ("/v1/completions", "/completion"):
        result = plain.simulate_post(route, json={"prompt": "Hi", "tools": [WEATHER]})
        assert result.status_code == 400 and result.json["error"]["param"] == "tools"
