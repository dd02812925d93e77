"""response_format, json_schema and grammar on the server's routes, with the real Qwen model."""

from __future__ import annotations

import json

import jsonschema
import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app

CITY = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"]}
ASK = [{"role": "user", "content": "The largest city of France and its population, as JSON."}]
LOCAL = {"Host": "localhost:8080"}


@pytest.fixture(scope="module")
def client(qwen_gguf) -> testing.TestClient:
    served = ServedModel(Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=512)), name="coder")
    return testing.TestClient(make_app(served), headers=LOCAL)


def chat(client, **fields) -> dict:
    result = client.simulate_post("/v1/chat/completions", json={"messages": ASK, "max_tokens": 120,
                                                                "temperature": 0, **fields})
    assert result.status_code == 200, result.text
    return result.json["choices"][0]


@pytest.mark.parametrize("fields", [
    {"response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}},
    {"response_format": {"type": "json_object", "schema": CITY}},
    {"json_schema": CITY},
], ids=["openai-json_schema", "json_object-with-schema", "llama-server-json_schema"])
def test_answers_validate_against_the_schema(client, fields):
    choice = chat(client, **fields)
    assert choice["finish_reason"] == "stop"
    jsonschema.validate(json.loads(choice["message"]["content"]), CITY)


def test_json_object_is_any_json_value_and_grammar_is_gbnf(client):
    assert json.loads(chat(client, response_format={"type": "json_object"})["message"]["content"]) is not None
    content = chat(client, grammar='root ::= "Paris" | "Lyon"')["message"]["content"]
    assert content in ("Paris", "Lyon")


def test_completion_routes_take_constraints_too(client):
    result = client.simulate_post("/completion", json={"prompt": "The capital of France, as JSON: ",
                                                       "n_predict": 80, "temperature": 0, "json_schema": CITY})
    assert result.status_code == 200, result.text
    jsonschema.validate(json.loads(result.json["content"]), CITY)


@pytest.mark.parametrize("fields, param, message", [
    ({"grammar": "root ::= item"}, "grammar", "the grammar is not valid GBNF: Rule 'item' not found"),
    ({"json_schema": {"type": 3}}, "json_schema", "the JSON schema cannot be used: type must be a string"),
    ({"response_format": {"type": "json_schema"}}, "response_format", "needs"),
    ({"response_format": {"type": "json_object"}, "grammar": 'root ::= "a"'}, "grammar", "give one of"),
])
def test_constraints_that_cannot_be_used_are_400_naming_the_field(client, fields, param, message):
    result = client.simulate_post("/v1/chat/completions", json={"messages": ASK, **fields})
    assert result.status_code == 400, result.text
    error = result.json["error"]
    assert error["param"] == param and message in error["message"]
