"""kinetic.llama_cpp, as code written for llama-cpp-python uses it: `import llama_cpp` (the llama-cpp-kinetic
distribution) loads it; the calls of llama-cpp-python's README and of its high-level API tests (its sdist's
tests/test_llama.py, read as a specification) answer in its shapes and with its defaults, greedy completions are
llama.cpp's tokens, and what Kinetic cannot do is a NotImplementedError, never ignored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from greedy_golden import load_golden
from kinetic.testing import real_models

PROMPT = "Q: Name the planets in the solar system? A: "


@pytest.fixture(scope="module")
def llama_cpp():
    import llama_cpp

    return llama_cpp


@pytest.fixture(scope="module")
def llm(llama_cpp):
    return llama_cpp.Llama(model_path=str(real_models.fetch("qwen")), n_ctx=2048, verbose=False)


def test_import_llama_cpp_is_kinetics():
    done = subprocess.run([sys.executable, "-c", "import llama_cpp; print(llama_cpp.Llama.__module__, "
                                                 "bool(llama_cpp.__version__))"], capture_output=True, text=True)
    assert done.stdout.split() == ["kinetic.llama_cpp.llama", "True"], done.stderr


def test_the_readme_completion(llm):
    output = llm(PROMPT, max_tokens=32, stop=["Q:", "\n"], echo=True)
    assert output["id"].startswith("cmpl-") and output["object"] == "text_completion"
    assert isinstance(output["created"], int) and output["model"] == llm.model_path
    [choice] = output["choices"]
    assert set(choice) == {"text", "index", "logprobs", "finish_reason"} and choice["text"].startswith(PROMPT)
    assert "\n" not in choice["text"] and choice["finish_reason"] in ("stop", "length")
    usage = output["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] <= usage["prompt_tokens"] + 32
    assert "timings" not in output and "system_fingerprint" not in output


def test_max_tokens_defaults_to_16(llm):
    assert llm("Once upon a time", temperature=0)["usage"]["completion_tokens"] == 16


def test_a_greedy_completion_is_llama_cpps(llm):
    golden = load_golden("qwen", real_models.fetch("qwen"), 6)
    prompt = golden["prompts"][1]  # margins of 0.1 or more on its first 6 steps
    assert min(prompt["as_shipped"]["margins"][:6]) > 0.1
    text = llm(prompt["prompt_ids"], max_tokens=6, temperature=0)["choices"][0]["text"]
    assert text.encode() == llm.detokenize(prompt["as_shipped"]["tokens"][:6])


def test_a_grammar_holds_the_answer(llama_cpp, llm):
    grammar = llama_cpp.LlamaGrammar.from_string('root ::= "true" | "false"')
    output = llm("The capital of france is paris, 'true' or 'false'?:\n", max_tokens=4, top_k=50, top_p=0.9,
                 temperature=0.8, seed=1337, grammar=grammar)
    assert output["choices"][0]["text"] in ("true", "false")
    schema = llama_cpp.LlamaGrammar.from_json_schema(json.dumps({"type": "object", "properties": {
        "ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}))
    text = llm("A JSON object: ", max_tokens=24, temperature=0, grammar=schema)["choices"][0]["text"]
    assert isinstance(json.loads(text)["ok"], bool)


def test_seeds_follow_the_models_seed_and_its_saved_state(llama_cpp, llm):
    """As test_real_llama: calls without a seed take new ones; load_state brings the seed back."""
    ask = dict(max_tokens=4, top_k=50, top_p=0.9, temperature=1.0,
               grammar=llama_cpp.LlamaGrammar.from_string(" | ".join(f'"{n}"' for n in range(1, 11)).join(
                   ("root ::= ", ""))))
    llm.set_seed(1337)
    state = llm.save_state()
    numbers = [llm("Pick a number from 1 to 10?:\n", **ask)["choices"][0]["text"] for _ in range(4)]
    llm.load_state(state)
    assert llm("Pick a number from 1 to 10?:\n", **ask)["choices"][0]["text"] == numbers[0]
    assert len(set(numbers)) > 1
    with pytest.raises(NotImplementedError, match="logits_processor"):
        llm("x", logits_processor=[lambda ids, logits: logits])


def test_chat_whole_and_streamed(llm):
    messages = [{"role": "user", "content": "Hi"}]
    whole = llm.create_chat_completion(messages=messages, max_tokens=12, temperature=0)
    assert whole["object"] == "chat.completion" and whole["choices"][0]["message"]["role"] == "assistant"
    chunks = list(llm.create_chat_completion(messages=messages, max_tokens=12, temperature=0, stream=True))
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]


def test_tools_and_json_answers(llm):
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    called = llm.create_chat_completion(messages=[{"role": "user", "content": "Weather in Paris?"}], tools=[weather],
                                        tool_choice="required", temperature=0)
    [call] = called["choices"][0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_weather" and "city" in json.loads(call["function"]["arguments"])
    answer = llm.create_chat_completion(messages=[{"role": "user", "content": "Give me a JSON object."}],
                                        response_format={"type": "json_object"}, max_tokens=32, temperature=0)
    json.loads(answer["choices"][0]["message"]["content"])


def test_the_vocabulary_as_llama_cpp_python_tokenizes(llama_cpp, llama_cpp_source):
    llama = llama_cpp.Llama(model_path=str(llama_cpp_source / "models" / "ggml-vocab-llama-spm.gguf"),
                            vocab_only=True, verbose=False)
    tokens = llama.tokenize(b"Hello World")
    assert tokens == [1, 15043, 2787] and tokens[0] == llama.token_bos()
    assert llama.detokenize(tokens) == b"Hello World"
    assert llama.tokenize(b"Hello World", add_bos=False) == [15043, 2787]
    assert llama.detokenize([15043, 2787]) != b"Hello World"  # its leading space stays
    assert llama.tokenize(b"Hello World</s>") == [1, 15043, 2787, 829, 29879, 29958]
    assert llama.tokenize(b"Hello World</s>", special=True) == [1, 15043, 2787, 2] and llama.token_eos() == 2
    assert llama.tokenize(b"", add_bos=True, special=True) == [1] and llama.detokenize([1]) == b""


def test_embeddings(llama_cpp, tmp_path):
    from kinetic.testing.gguf_factory import Dims, write_random_model

    path = str(write_random_model(tmp_path / "emb.gguf", "qwen3", Dims(), "F32", metadata={"qwen3.pooling_type": 1}))
    llm = llama_cpp.Llama(model_path=path, embedding=True, verbose=False)
    vector = llm.embed("tok5")
    assert len(vector) == llm.n_embd() and abs(sum(v * v for v in vector) - 1) > 1e-3  # not normalised by default
    assert abs(sum(v * v for v in llm.embed("tok5", normalize=True)) - 1) < 1e-5
    made = llm.create_embedding(["tok5", "tok9"])
    assert made["object"] == "list" and [d["index"] for d in made["data"]] == [0, 1]
    assert made["data"][0]["embedding"] == vector and made["usage"]["prompt_tokens"] > 0
    with pytest.raises(ValueError, match="embedding=True"):
        llama_cpp.Llama(model_path=path, verbose=False).embed("tok5")
    with pytest.raises(ValueError, match="is an embedding or reranking model"):
        llm("tok5")


def test_what_kinetic_cannot_do_is_said(llama_cpp, llm):
    path = llm.model_path
    with pytest.raises(NotImplementedError, match="chat_format.*own template"):
        llama_cpp.Llama(model_path=path, chat_format="llama-2")
    with pytest.raises(NotImplementedError, match="lora_path"):
        llama_cpp.Llama(model_path=path, lora_path="adapter.gguf")
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_cxt'"):
        llama_cpp.Llama(model_path=path, n_cxt=512)
    with pytest.raises(NotImplementedError, match="echo with logprobs"):
        llm("x", echo=True, logprobs=1)
    with pytest.raises(ValueError, match="Failed to load model from file"):
        llama_cpp.Llama(model_path="missing.gguf")


def test_an_open_stream_and_seed_minus_one(llama_cpp, llm):
    stream = llm("Once upon a time", max_tokens=50, temperature=0, stream=True)
    next(stream)
    with pytest.raises(RuntimeError, match="stream still holds the model"):
        llm("x", max_tokens=1)
    stream.close()
    assert llm("Once upon a time", max_tokens=2, temperature=0)["choices"][0]["text"]
    llm.set_seed(-1)  # a fresh seed, as llama.cpp reads -1
    first = llm._seeds.getstate()
    llm.set_seed(-1)
    assert llm._seeds.getstate() != first
