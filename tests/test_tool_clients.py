"""Tool calls and structured output through the real client libraries (the openai SDK, langchain-openai)
against `kinetic serve` on the real Qwen2.5-Coder 0.5B, as the issue's users call them."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
                   "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]


class City(BaseModel):
    name: str
    country: str
    population: int


@pytest.fixture(scope="module")
def chat_model(base_url):
    langchain_openai = pytest.importorskip("langchain_openai")
    return langchain_openai.ChatOpenAI(base_url=base_url, api_key="local", model="coder", temperature=0,
                                       max_tokens=80, max_retries=0, timeout=120)


def city_of(arguments: str) -> str:
    city = json.loads(arguments)["city"]
    assert isinstance(city, str) and "paris" in city.lower()
    return city


def test_openai_tools_answer_with_a_call(openai_client):
    chat = openai_client.chat.completions.create(model="coder", messages=ASK, tools=[WEATHER], temperature=0, max_tokens=60)
    choice = chat.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id
    city_of(call.function.arguments)


def test_openai_streamed_tool_call_comes_in_deltas(openai_client):
    stream = openai_client.chat.completions.create(model="coder", messages=ASK, tools=[WEATHER], temperature=0,
                                            max_tokens=60, stream=True, tool_choice="required")
    calls: dict[int, dict] = {}
    content, reasons = "", []
    for chunk in stream:
        delta = chunk.choices[0].delta
        content += delta.content or ""
        reasons.append(chunk.choices[0].finish_reason)
        for part in delta.tool_calls or ():
            call = calls.setdefault(part.index, {"id": part.id, "name": part.function.name, "arguments": ""})
            call["arguments"] += part.function.arguments or ""
    assert content == "" and reasons[-1] == "tool_calls"
    [call] = calls.values()
    assert call["id"] and call["name"] == "get_weather"
    city_of(call["arguments"])


def test_openai_strict_json_schema_and_parse_with_pydantic(openai_client):
    ask = [{"role": "user", "content": "Describe the city of Lyon."}]
    schema = {**City.model_json_schema(), "additionalProperties": False}  # as strict mode asks schemas to be
    strict = openai_client.chat.completions.create(
        model="coder", messages=ask, temperature=0, max_tokens=80,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "strict": True, "schema": schema}})
    City.model_validate_json(strict.choices[0].message.content)
    parsed = openai_client.beta.chat.completions.parse(model="coder", messages=ask, temperature=0, max_tokens=80,
                                                response_format=City)
    assert isinstance(parsed.choices[0].message.parsed, City)


def test_langchain_bind_tools_auto_one_call_also_streamed(chat_model):
    bound = chat_model.bind_tools([WEATHER], tool_choice="auto", parallel_tool_calls=False)
    message = bound.invoke("What is the weather in Paris?")
    [call] = message.tool_calls
    assert call["name"] == "get_weather" and "paris" in call["args"]["city"].lower()
    streamed = None
    for chunk in bound.stream("What is the weather in Paris?"):
        streamed = chunk if streamed is None else streamed + chunk
    assert [(c["name"], c["args"]) for c in streamed.tool_calls] == [(call["name"], call["args"])]


def test_langchain_structured_output_strict(chat_model):
    structured = chat_model.with_structured_output(City, method="json_schema", strict=True)
    assert isinstance(structured.invoke("Describe the city of Lyon."), City)


def test_langchain_tool_result_sent_back_comes_back_as_text(chat_model):
    """The follow-up goes to the model without tools: Qwen2.5-Coder 0.5B writes its call again whenever tools
    are offered beside a result (llama-server's answer is the same), so the answer is read as text here."""
    from langchain_core.messages import HumanMessage, ToolMessage

    question = HumanMessage("What is the weather in Paris?")
    called = chat_model.bind_tools([WEATHER], tool_choice="required").invoke([question])
    [call] = called.tool_calls
    result = ToolMessage(json.dumps({"temp_c": 18, "sky": "clear"}), tool_call_id=call["id"])
    answer = chat_model.invoke([question, called, result])
    assert answer.tool_calls == [] and answer.content.strip()
