"""Ollama's API through the official ollama client against `kinetic serve` on the real Qwen2.5-Coder 0.5B, as
Open WebUI, Continue and scripts written for Ollama call it; greedy answers are the OpenAI route's."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

ollama = pytest.importorskip("ollama")

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "The city's name"}},
                   "required": ["city"]}}}
HI = [{"role": "user", "content": "Say hi in two words."}]
GREEDY = {"temperature": 0, "num_predict": 12}


@pytest.fixture(scope="module")
def client(base_url):
    return ollama.Client(host=base_url.removesuffix("/v1"), timeout=120)


def test_chat_is_the_openai_routes_greedy_answer(client, openai_client):
    chat = client.chat(model="coder", messages=HI, options=GREEDY)
    same = openai_client.chat.completions.create(model="coder", messages=HI, temperature=0, max_tokens=12)
    assert chat.message.role == "assistant" and chat.message.content == same.choices[0].message.content
    assert chat.done and chat.done_reason == same.choices[0].finish_reason
    assert chat.eval_count == same.usage.completion_tokens and chat.prompt_eval_count == same.usage.prompt_tokens
    assert chat.total_duration >= chat.prompt_eval_duration + chat.eval_duration > 0 and chat.load_duration >= 0


def test_streamed_chat_adds_up_to_the_whole(client):
    whole = client.chat(model="coder", messages=HI, options=GREEDY)
    parts = list(client.chat(model="coder:latest", messages=HI, options=GREEDY, stream=True))
    assert [part.done for part in parts] == [False] * (len(parts) - 1) + [True]
    assert "".join(part.message.content for part in parts) == whole.message.content
    assert parts[-1].eval_count == whole.eval_count and parts[-1].done_reason == whole.done_reason
    assert all(part.model == "coder:latest" and part.created_at.endswith("Z") for part in parts)


def test_generate_is_the_openai_routes_greedy_answer(client, openai_client):
    generated = client.generate(model="coder", prompt="def add(a, b):", raw=True, options=GREEDY)
    same = openai_client.completions.create(model="coder", prompt="def add(a, b):", temperature=0, max_tokens=12)
    assert generated.response == same.choices[0].text and generated.eval_count == 12
    assert generated.done_reason == "length"
    chat_like = client.generate(model="coder", prompt="Say hi in two words.", options=GREEDY)
    assert chat_like.response == client.chat(model="coder", messages=HI, options=GREEDY).message.content


def test_list_ps_and_show_describe_the_served_model(client):
    [listed] = client.list().models
    assert listed.model == "coder:latest" and listed.details.family == "qwen2"
    assert listed.details.quantization_level == "Q4_K_M" and listed.details.format == "gguf" and listed.size > 0
    [running] = client.ps().models
    assert running.model == "coder:latest" and running.context_length == 1024 and running.size_vram == 0
    assert running.digest == listed.digest and running.expires_at.year > 2200  # `ollama ps` says Forever
    shown = client.show("coder")
    assert shown.modelinfo["general.architecture"] == "qwen2" and shown.modelinfo["qwen2.context_length"] == 32768
    assert shown.modelinfo["qwen2.attention.layer_norm_rms_epsilon"] == 1e-06 and "general.name" not in shown.modelinfo
    assert shown.modelinfo["tokenizer.ggml.tokens"] == []  # long arrays only when verbose
    assert shown.capabilities == ["completion", "tools"] and "<|im_start|>" in shown.template
    with pytest.raises(ollama.ResponseError) as missing:
        client.show("llama3.2")
    assert missing.value.status_code == 404 and missing.value.error == "model 'llama3.2' not found"


def test_format_json_schema_is_followed(client):
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "country": {"type": "string"}},
              "required": ["name", "country"], "additionalProperties": False}
    chat = client.chat(model="coder", messages=[{"role": "user", "content": "Describe Lyon."}], format=schema,
                       options={"temperature": 0, "num_predict": 60})
    city = json.loads(chat.message.content)
    assert set(city) == {"name", "country"} and all(isinstance(v, str) for v in city.values())


def test_tool_call_comes_back_with_object_arguments(client):
    ask = [{"role": "user", "content": "What is the weather in Paris?"}]
    chat = client.chat(model="coder", messages=ask, tools=[WEATHER], options={"temperature": 0, "num_predict": 60})
    [call] = chat.message.tool_calls
    assert call.function.name == "get_weather" and "paris" in call.function.arguments["city"].lower()
    assert chat.message.content == "" and chat.done_reason == "stop"
    streamed = [p.message.tool_calls for p in client.chat(model="coder", messages=ask, tools=[WEATHER], stream=True,
                                                          options={"temperature": 0, "num_predict": 60}) if p.message.tool_calls]
    assert [[c.function.arguments for c in calls] for calls in streamed] == [[call.function.arguments]]
    answered = ask + [chat.message, {"role": "tool", "content": "18 C and sunny", "tool_name": "get_weather"}]
    after = client.chat(model="coder", messages=answered, tools=[WEATHER], options={"temperature": 0, "num_predict": 8})
    assert after.done and after.prompt_eval_count > chat.prompt_eval_count + chat.eval_count  # the call and result


@pytest.mark.parametrize("think", [True, "high"])
def test_think_on_a_model_that_does_not_think_is_refused(client, think):
    with pytest.raises(ollama.ResponseError) as refused:
        client.chat(model="coder", messages=HI, think=think)
    assert refused.value.status_code == 400 and refused.value.error == '"coder" does not support thinking'
    assert client.chat(model="coder", messages=HI, think=False, options=GREEDY).message.content


def test_ollama_flag_listens_on_ollamas_port(tiny_gguf):
    """Whether or not 11434 is free here, taking it first makes serve say which port it tried."""
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 11434))
            taken.listen()
        except OSError:
            pass  # another server holds it: serve finds it in use all the same
        done = subprocess.run([sys.executable, "-m", "kinetic", "serve", str(tiny_gguf), "--ollama", "--device", "cpu"],
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert done.stderr.endswith("kinetic: port 11434 is in use on 127.0.0.1; pick another with --port "
                                "(--port 0 picks a free one)\n")


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    from kinetic.testing.gguf_factory import write_random_model

    return write_random_model(tmp_path_factory.mktemp("tiny") / "tiny.gguf")
