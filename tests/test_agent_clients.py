"""The Anthropic Messages API through the official `anthropic` client and the Responses API through the
`openai` client's responses, against `kinetic serve` on the real Qwen2.5-Coder 0.5B: greedy answers equal to
the chat route's, a tool call and its result, streamed and whole, and the errors the clients raise."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

SCHEMA = {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
          "required": ["city"]}
WEATHER = {"name": "get_weather", "description": "The weather in a city now."}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
HI = [{"role": "user", "content": "Write a Python function that adds two numbers."}]
GREEDY = {"extra_body": {"temperature": 0}}  # today's anthropic client leaves the sampler fields to extra_body


class City(BaseModel):
    name: str
    country: str


@pytest.fixture(scope="module")
def claude(base_url):
    anthropic = pytest.importorskip("anthropic")
    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="local", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def chat_answer(openai_client) -> str:
    chat = openai_client.chat.completions.create(model="coder", messages=HI, temperature=0, max_tokens=48)
    return chat.choices[0].message.content


def city_of(arguments: dict) -> str:
    assert "paris" in arguments["city"].lower()
    return arguments["city"]


def test_anthropic_answer_whole_and_streamed_is_the_chat_routes(claude, chat_answer):
    message = claude.messages.create(model="coder", messages=HI, max_tokens=48, **GREEDY)
    assert [block.type for block in message.content] == ["text"] and message.content[0].text == chat_answer
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 48
    counted = claude.messages.count_tokens(model="coder", messages=HI)
    assert message.usage.input_tokens + message.usage.cache_read_input_tokens == counted.input_tokens
    with claude.messages.stream(model="coder", messages=HI, max_tokens=48, **GREEDY) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == final.content[0].text == chat_answer and final.stop_reason == "max_tokens"


def test_anthropic_tool_use_then_its_result(claude):
    tools = [{**WEATHER, "input_schema": SCHEMA}]
    message = claude.messages.create(model="coder", messages=ASK, tools=tools, max_tokens=60, **GREEDY)
    [call] = message.content
    assert message.stop_reason == "tool_use" and call.type == "tool_use" and call.name == "get_weather"
    city_of(call.input)
    with claude.messages.stream(model="coder", messages=ASK, tools=tools, max_tokens=60, **GREEDY,
                                tool_choice={"type": "any"}) as stream:
        streamed = stream.get_final_message()
    assert [(b.type, b.name, b.input) for b in streamed.content] == [("tool_use", call.name, call.input)]
    result = {"type": "tool_result", "tool_use_id": call.id, "content": json.dumps({"temp_c": 18, "sky": "clear"})}
    answer = claude.messages.create(
        model="coder", max_tokens=60, **GREEDY, tools=tools, tool_choice={"type": "none"},
        messages=[*ASK, {"role": "assistant", "content": message.content}, {"role": "user", "content": [result]}])
    assert answer.stop_reason in ("end_turn", "max_tokens") and "18" in answer.content[0].text


def test_anthropic_parse_gives_the_schemas_object(claude):
    parsed = claude.messages.parse(model="coder", messages=[{"role": "user", "content": "Describe the city of Lyon."}],
                                   output_format=City, max_tokens=80, **GREEDY)
    assert isinstance(parsed.parsed_output, City)


def test_anthropic_client_raises_the_servers_400(claude):
    anthropic = pytest.importorskip("anthropic")
    with pytest.raises(anthropic.BadRequestError) as raised:
        claude.messages.create(model="coder", messages=ASK, max_tokens=10, tools=[{**WEATHER, "input_schema": SCHEMA}],
                               tool_choice={"type": "tool", "name": "get_time"})
    assert raised.value.body["error"]["type"] == "invalid_request_error"
    assert "tool_choice names 'get_time'" in raised.value.body["error"]["message"]


def test_responses_whole_and_streamed_are_the_chat_routes(openai_client, chat_answer):
    response = openai_client.responses.create(model="coder", input=HI, max_output_tokens=48, temperature=0)
    assert response.output_text == chat_answer and response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens" and response.usage.output_tokens == 48
    stream = openai_client.responses.create(model="coder", input=HI, max_output_tokens=48, temperature=0, stream=True)
    events = list(stream)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == chat_answer
    assert events[-1].type == "response.incomplete" and events[-1].response.output_text == chat_answer


def test_responses_function_call_then_its_output(openai_client):
    tools = [{"type": "function", **WEATHER, "parameters": SCHEMA}]
    response = openai_client.responses.create(model="coder", input=ASK, tools=tools, max_output_tokens=60,
                                              temperature=0)
    [call] = response.output
    assert call.type == "function_call" and call.name == "get_weather" and response.status == "completed"
    city_of(json.loads(call.arguments))
    with openai_client.responses.stream(model="coder", input=ASK, tools=tools, max_output_tokens=60,
                                        temperature=0, tool_choice="required") as stream:
        streamed = stream.get_final_response()
    assert [(item.name, item.arguments) for item in streamed.output] == [(call.name, call.arguments)]
    follow_up = [*ASK, {"type": "function_call", "call_id": call.call_id, "name": call.name,
                        "arguments": call.arguments},
                 {"type": "function_call_output", "call_id": call.call_id,
                  "output": json.dumps({"temp_c": 18, "sky": "clear"})}]
    answer = openai_client.responses.create(model="coder", input=follow_up, tools=tools, tool_choice="none",
                                            max_output_tokens=60, temperature=0)
    assert "18" in answer.output_text


def test_responses_parse_gives_the_schemas_object(openai_client):
    parsed = openai_client.responses.parse(model="coder", input="Describe the city of Lyon.", text_format=City,
                                           max_output_tokens=80, temperature=0)
    assert isinstance(parsed.output_parsed, City)


def test_openai_client_raises_the_servers_400(openai_client):
    openai = pytest.importorskip("openai")
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client.responses.create(model="coder", input="hi", previous_response_id="resp_1")
    assert raised.value.body["param"] == "previous_response_id"
