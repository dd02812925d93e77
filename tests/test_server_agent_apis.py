"""Anthropic's Messages API and OpenAI's Responses API through falcon's testing client on the real Qwen model:
the same greedy answers and calls as the chat route, streams that add up to the whole answer, the requests
as chat messages, and refusals in each API's error shape."""

from __future__ import annotations

import json

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.server import ServedModel, make_app
from kinetic.server.errors import anthropic_error_body
from kinetic.server.responses import stream_error
from kinetic.server import sse
from kinetic.server.anthropic_request import chat_body as anthropic_chat
from kinetic.server.responses_request import chat_body as responses_chat
from test_server_reasoning import THINKING_TEMPLATE

LOCAL = {"Host": "localhost"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
          "required": ["city"]}
WEATHER = {"name": "get_weather", "description": "The weather in a city now."}
CHAT_TOOL = {"type": "function", "function": {**WEATHER, "parameters": SCHEMA}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
HI = [{"role": "user", "content": "Say hi."}]
PROMPTS = [HI, [{"role": "user", "content": "Write a Python function that adds two numbers."}]]


@pytest.fixture(scope="module")
def served(qwen_gguf) -> ServedModel:
    return ServedModel(Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=512)), name="coder")


@pytest.fixture(scope="module")
def client(served) -> testing.TestClient:
    return testing.TestClient(make_app(served), headers=LOCAL)


def chat(client, messages, max_tokens=40, **fields) -> dict:
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, **fields}
    result = client.simulate_post("/v1/chat/completions", json=body)
    assert result.status_code == 200, result.text
    return result.json["choices"][0]


def events_of(result) -> list[dict]:
    """A named event stream's payloads, each checked to carry its event's name as its type."""
    assert result.status_code == 200 and result.headers["content-type"] == "text/event-stream", result.text
    payloads = []
    for raw in filter(None, result.text.split("\n\n")):
        name, data = raw.split("\n")
        payload = json.loads(data[len("data: "):])
        assert name == "event: " + payload["type"]
        payloads.append(payload)
    return payloads


def anthropic_blocks(events: list[dict]) -> list[dict]:
    """Content blocks as a client adds them up from the events, each started, added to and stopped in turn."""
    blocks, open_index = [], None
    for event in events:
        if event["type"] == "content_block_start":
            assert open_index is None and event["index"] == len(blocks)
            blocks.append(dict(event["content_block"]))
            open_index = event["index"]
        elif event["type"] == "content_block_delta":
            assert event["index"] == open_index
            delta, block = event["delta"], blocks[open_index]
            if delta["type"] == "input_json_delta":
                block["input"] = json.loads(delta["partial_json"])
            else:
                key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}
                block[key[delta["type"]]] += delta[key[delta["type"]]]
        elif event["type"] == "content_block_stop":
            assert event["index"] == open_index
            open_index = None
    return blocks


@pytest.mark.parametrize("messages", PROMPTS)
def test_messages_greedy_answer_is_the_chat_routes(client, messages):
    expected = chat(client, messages)
    body = {"messages": messages, "max_tokens": 40, "temperature": 0}
    message = client.simulate_post("/v1/messages", json=body).json
    assert message["type"] == "message" and message["role"] == "assistant" and message["model"] == "coder"
    assert message["content"] == [{"type": "text", "text": expected["message"]["content"]}]
    assert message["stop_reason"] == {"stop": "end_turn", "length": "max_tokens"}[expected["finish_reason"]]
    usage = message["usage"]
    counted = client.simulate_post("/v1/messages/count_tokens", json={"messages": messages}).json
    assert usage["input_tokens"] + usage["cache_read_input_tokens"] == counted["input_tokens"]
    events = events_of(client.simulate_post("/v1/messages", json={**body, "stream": True}))
    assert [e["type"] for e in events[:2]] == ["message_start", "content_block_start"]
    assert [e["type"] for e in events[-3:]] == ["content_block_stop", "message_delta", "message_stop"]
    assert anthropic_blocks(events) == message["content"]
    assert events[-2]["delta"] == {"stop_reason": message["stop_reason"], "stop_sequence": None}
    assert events[-2]["usage"]["output_tokens"] == usage["output_tokens"]


def test_system_as_string_or_blocks_is_the_chat_routes_system_message(client):
    system = "You answer in French."
    expected = chat(client, [{"role": "system", "content": system}, *HI])["message"]["content"]
    for given in (system, [{"type": "text", "text": "You answer "}, {"type": "text", "text": "in French."}]):
        body = {"system": given, "messages": HI, "max_tokens": 40, "temperature": 0}
        assert client.simulate_post("/v1/messages", json=body).json["content"][0]["text"] == expected


@pytest.mark.parametrize("stream", [False, True])
def test_messages_tool_call_is_the_chat_routes(client, stream):
    expected = chat(client, ASK, 60, tools=[CHAT_TOOL], parallel_tool_calls=True)
    [call] = expected["message"]["tool_calls"]
    body = {"messages": ASK, "max_tokens": 60, "temperature": 0, "tools": [{**WEATHER, "input_schema": SCHEMA}]}
    result = client.simulate_post("/v1/messages", json={**body, "stream": stream})
    events = events_of(result) if stream else None
    content = anthropic_blocks(events) if stream else result.json["content"]
    [block] = content
    assert block["type"] == "tool_use" and block["id"].startswith("call_")
    assert (block["name"], block["input"]) == (call["function"]["name"], json.loads(call["function"]["arguments"]))
    reason = events[-2]["delta"]["stop_reason"] if stream else result.json["stop_reason"]
    assert reason == "tool_use"


def test_stop_sequences_and_max_tokens_name_why_the_answer_stopped(client):
    whole = chat(client, HI)["message"]["content"]
    word = whole.split()[1]
    body = {"messages": HI, "max_tokens": 40, "temperature": 0, "stop_sequences": [word]}
    stopped = client.simulate_post("/v1/messages", json=body).json
    assert (stopped["stop_reason"], stopped["stop_sequence"]) == ("stop_sequence", word)
    assert stopped["content"][0]["text"] == whole[: whole.index(word)]
    cut = client.simulate_post("/v1/messages", json={**body, "stop_sequences": [], "max_tokens": 2}).json
    assert (cut["stop_reason"], cut["stop_sequence"], cut["usage"]["output_tokens"]) == ("max_tokens", None, 2)


@pytest.mark.parametrize("body, chat_fields", [
    ({"system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
      "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "!"}]}]},
     {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]}),
    ({"messages": [*ASK, {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "A call.", "signature": "x"}, {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "18 C"}]}, {"type": "text", "text": "And tomorrow?"}]}],
      "tools": [{**WEATHER, "input_schema": SCHEMA}],
      "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
      "stop_sequences": ["END"], "top_k": 5, "metadata": {"user_id": "u1"}, "thinking": {"type": "disabled"},
      "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": SCHEMA}}},
     {"messages": [*ASK, {"role": "assistant", "content": "Let me look.", "reasoning_content": "A call.",
                          "tool_calls": [{"id": "toolu_1", "type": "function", "function": {
                              "name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
                   {"role": "tool", "tool_call_id": "toolu_1", "content": "18 C"},
                   {"role": "user", "content": "And tomorrow?"}],
      "tools": [CHAT_TOOL], "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
      "parallel_tool_calls": False, "stop": ["END"], "top_k": 5, "chat_template_kwargs": {"enable_thinking": False},
      "response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": SCHEMA}}}),
])
def test_anthropic_requests_are_chat_bodies(body, chat_fields):
    assert anthropic_chat(body) == {"stream": False, "stop": [], **chat_fields}


@pytest.mark.parametrize("body, says", [
    ({"messages": HI}, "max_tokens is required"),
    ({"messages": HI, "max_tokens": 0}, "max_tokens 0 (warming the prompt cache without an answer) is not served"),
    ({"messages": HI, "max_tokens": -1}, "max_tokens must be between 0"),
    ({"messages": [], "max_tokens": 5}, "messages must be a non-empty list"),
    ({"messages": [{"role": "system", "content": "x"}], "max_tokens": 5}, "system goes in the system field"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}], "max_tokens": 5},
     "this model reads only text"),
    ({"messages": HI, "max_tokens": 5, "system": 3}, "system must be a string or a list"),
    ({"messages": HI, "max_tokens": 5, "tools": [{"type": "bash_20250124", "name": "bash"}]},
     "bash_20250124 is one of Anthropic's own tools"),
    ({"messages": HI, "max_tokens": 5, "tools": [{**WEATHER, "input_schema": SCHEMA}],
      "tool_choice": {"type": "sometimes"}}, "tool_choice type must be auto, any, tool or none"),
    ({"messages": HI, "max_tokens": 5, "thinking": {"type": "enabled", "budget_tokens": 5}},
     "budget_tokens must be a number of tokens below max_tokens"),
    ({"messages": HI, "max_tokens": 5, "temperature": "warm"}, "temperature must be a number"),
    ({"messages": HI, "max_tokens": 5, "output_config": {"format": {"type": "yaml"}}}, "output_config.format must be"),
    ({"messages": HI, "max_tokens": 5, "stop_sequences": [1]}, "stop_sequences must be a string"),
])
def test_messages_refusals_come_in_anthropics_shape(client, body, says):
    result = client.simulate_post("/v1/messages", json=body)
    assert result.status_code == 400, result.text
    assert result.json["type"] == "error" and result.json["error"]["type"] == "invalid_request_error"
    assert says in result.json["error"]["message"]


def test_transport_refusals_come_in_anthropics_shape(client):
    wrong_type = client.simulate_post("/v1/messages", body=b"{}", headers={"Content-Type": "text/plain"})
    malformed = client.simulate_post("/v1/messages/count_tokens", body=b"{",
                                     headers={"Content-Type": "application/json"})
    method = client.simulate_get("/v1/messages")
    for result, status in ((wrong_type, 415), (malformed, 400), (method, 405)):
        assert result.status_code == status
        assert set(result.json) == {"type", "error"} and result.json["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("messages", PROMPTS)
def test_responses_greedy_answer_is_the_chat_routes(client, messages):
    expected = chat(client, messages)
    body = {"input": messages if len(messages) > 1 else messages[0]["content"], "max_output_tokens": 40,
            "temperature": 0}
    response = client.simulate_post("/v1/responses", json=body).json
    [message] = response["output"]
    assert message["type"] == "message" and message["content"][0]["text"] == expected["message"]["content"]
    cut = expected["finish_reason"] == "length"
    assert response["status"] == ("incomplete" if cut else "completed")
    assert response["incomplete_details"] == ({"reason": "max_output_tokens"} if cut else None)
    assert response["completed_at"] >= response["created_at"]
    counted = client.simulate_post("/v1/responses/input_tokens", json=body).json
    assert response["usage"]["input_tokens"] == counted["input_tokens"]
    events = events_of(client.simulate_post("/v1/responses", json={**body, "stream": True}))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:4]] == ["response.created", "response.in_progress",
                                               "response.output_item.added", "response.content_part.added"]
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e for e in events if e["type"] == "response.output_text.done"]
    assert text == done[0]["text"] == message["content"][0]["text"]
    assert events[-1]["type"] == "response." + response["status"]
    assert events[-1]["response"]["output"][0]["content"] == message["content"]


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tool_call_is_the_chat_routes(client, stream):
    expected = chat(client, ASK, 60, tools=[CHAT_TOOL], parallel_tool_calls=True)
    [call] = expected["message"]["tool_calls"]
    body = {"input": ASK, "max_output_tokens": 60, "temperature": 0,
            "tools": [{"type": "function", **WEATHER, "parameters": SCHEMA}], "stream": stream}
    result = client.simulate_post("/v1/responses", json=body)
    events = events_of(result) if stream else None
    output = events[-1]["response"]["output"] if stream else result.json["output"]
    [item] = output
    assert item["type"] == "function_call" and item["status"] == "completed" and item["call_id"].startswith("call_")
    assert (item["name"], json.loads(item["arguments"])) == (call["function"]["name"],
                                                             json.loads(call["function"]["arguments"]))
    if stream:
        deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
        assert "".join(deltas) == item["arguments"]


def test_responses_text_format_json_schema_is_structured_output(client):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "country": {"type": "string"}},
              "required": ["name", "country"], "additionalProperties": False}
    body = {"input": "Describe the city of Lyon.", "max_output_tokens": 60, "temperature": 0,
            "text": {"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}}}
    response = client.simulate_post("/v1/responses", json=body).json
    answer = json.loads(response["output"][0]["content"][0]["text"])
    assert set(answer) == {"name", "country"}
    assert response["text"] == body["text"]


@pytest.mark.parametrize("body, chat_fields", [
    ({"instructions": "Be brief.", "input": "Hi"},
     {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}),
    ({"input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
                *ASK, {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "A call."}]},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
                {"type": "function_call_output", "call_id": "c1", "output": "18 C"},
                {"role": "assistant", "content": [{"type": "output_text", "text": "It is 18 C."}]}],
      "tools": [{"type": "function", **WEATHER, "parameters": SCHEMA}], "tool_choice": {"type": "function",
                                                                                         "name": "get_weather"},
      "parallel_tool_calls": False, "max_output_tokens": 9, "top_p": 0.5, "reasoning": {"effort": "none"},
      "text": {"format": {"type": "json_object"}}},
     {"messages": [{"role": "developer", "content": "Rules."}, *ASK,
                   {"role": "assistant", "content": "", "reasoning_content": "A call.", "tool_calls": [
                       {"id": "c1", "type": "function", "function": {"name": "get_weather",
                                                                    "arguments": '{"city": "Paris"}'}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "18 C"},
                   {"role": "assistant", "content": "It is 18 C."}],
      "tools": [CHAT_TOOL], "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
      "parallel_tool_calls": False, "max_tokens": 9, "top_p": 0.5, "response_format": {"type": "json_object"},
      "chat_template_kwargs": {"enable_thinking": False}}),
])
def test_responses_requests_are_chat_bodies(body, chat_fields):
    assert responses_chat(body) == {"stream": False, **chat_fields}


@pytest.mark.parametrize("body, param, says", [
    ({}, "input", "input must be a string or a non-empty list"),
    ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id", "keeps none"),
    ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools", "only function tools are served"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input",
     "this model reads only text"),
    ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input", "keeps none"),
    ({"input": "hi", "text": {"format": {"type": "yaml"}}}, "text", "text.format must be"),
    ({"input": "hi", "max_output_tokens": 0}, "max_output_tokens", "max_output_tokens must be between 1"),
    ({"input": "hi", "background": True}, "background", "background responses are not served"),
])
def test_responses_refusals_are_openai_400s_naming_the_field(client, body, param, says):
    result = client.simulate_post("/v1/responses", json=body)
    assert result.status_code == 400, result.text
    error = result.json["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param) and says in error["message"]


@pytest.mark.parametrize("failure, payload", [
    (anthropic_error_body, {"type": "error", "error": {"type": "invalid_request_error", "message": "it failed"}}),
    (stream_error, {"type": "error", "error": {"message": "it failed", "type": "invalid_request_error",
                                               "param": None, "code": None}}),
])
def test_a_failure_mid_stream_ends_it_with_an_error_event_in_the_apis_shape(failure, payload):
    def failing():
        yield {"type": "message_start"}
        raise KineticError("it failed")

    sent = b"".join(sse.guarded(failing(), None, lambda chunk: sse.event(chunk, named=True), failure)).decode()
    assert sent.split("\n\n")[1] == "event: error\ndata: " + json.dumps(payload, separators=(",", ":"))


@pytest.fixture(scope="module")
def thinker(qwen_gguf, tmp_path_factory) -> testing.TestClient:
    template = tmp_path_factory.mktemp("agents") / "thinking.jinja"
    template.write_text(THINKING_TEMPLATE)
    options = SessionOptions(device="cpu", ctx_size=256, chat_template_file=template)
    session = Session(qwen_gguf, options, announce=lambda line: None)
    return testing.TestClient(make_app(ServedModel(session, name="thinker")), headers=LOCAL)


def test_thinking_comes_as_thinking_blocks_and_reasoning_items(thinker):
    body = {"messages": HI, "max_tokens": 6, "temperature": 0}
    expected = thinker.simulate_post("/v1/chat/completions", json=body).json["choices"][0]["message"]
    enabled = {**body, "thinking": {"type": "enabled", "budget_tokens": 4}}
    message = thinker.simulate_post("/v1/messages", json=enabled).json
    assert message["content"] == [{"type": "thinking", "thinking": expected["reasoning_content"], "signature": ""}]
    events = events_of(thinker.simulate_post("/v1/messages", json={**enabled, "stream": True}))
    assert anthropic_blocks(events) == message["content"]
    assert [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"][-1] == "signature_delta"
    disabled = thinker.simulate_post("/v1/messages", json={**body, "thinking": {"type": "disabled"}}).json
    assert [block["type"] for block in disabled["content"]] == ["text"]
    response = thinker.simulate_post("/v1/responses", json={"input": HI, "max_output_tokens": 6,
                                                            "temperature": 0}).json
    [item] = response["output"]
    assert item["type"] == "reasoning" and item["content"] == [{"type": "reasoning_text",
                                                                 "text": expected["reasoning_content"]}]
