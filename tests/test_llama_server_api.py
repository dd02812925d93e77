"""llama-server's own API, field for field: /completion, /infill, /apply-template, /slots and the OpenAI routes'
llama-server fields.

tests/golden/llama_server/qwen.json holds llama-server's answers to scripts/llama_server_compat.py's requests
on Qwen2.5-Coder 0.5B (llama.cpp 11434, greedy, one slot of its context): the script made it with --save.
Each request is sent here to Kinetic, whose greedy answer must be llama-server's token for token.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from falcon import testing

from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.server import ServedModel, make_app
from kinetic.server.errors import ApiError
from kinetic.server.infill import Chunk, infill_prompt
from kinetic.server.llama_answer import slot_report, token_text
from kinetic.server.line_limits import LineLimits
from kinetic.server.llama_prompt import completion_tokens
from kinetic.server.metrics import Slot
from kinetic.server.served import Job, Run, Usage
from kinetic.tokenizer.tokenizer import load_tokenizer

GOLDEN = json.loads((Path(__file__).parent / "golden" / "llama_server" / "qwen.json").read_text())
REQUESTS = GOLDEN["requests"]
LOCAL = {"Host": "localhost:8080"}
GREEDY = ["completion", "completion_probs", "completion_ids", "completion_mixed", "completion_stop",
          "completion_no_cache", "completion_indent", "infill", "infill_prompt", "infill_indent"]
SAME = ["content", "tokens", "tokens_predicted", "tokens_evaluated", "stop_type", "stopping_word", "prompt",
        "truncated", "has_new_line", "stop", "index"]
# llama-server's generation_settings that Kinetic has no counterpart for (scripts/llama_server_compat.py's
# EXPLAINED says why)
NOT_KINETIC = {"adaptive_target", "adaptive_decay", "grammar", "grammar_lazy", "grammar_triggers",
               "preserved_tokens", "chat_format", "reasoning_format", "reasoning_in_content", "generation_prompt",
               "speculative.types", "backend_sampling"}


@pytest.fixture(scope="module")
def served(qwen_gguf) -> ServedModel:
    session = Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=GOLDEN["context"]))
    return ServedModel(session, name="coder")


@pytest.fixture(scope="module")
def client(served) -> testing.TestClient:
    return testing.TestClient(make_app(served), headers=LOCAL)


def post(client, name: str, **change):
    request = REQUESTS[name]
    return client.simulate_post(request["path"], json={**request["body"], **change})


@pytest.mark.parametrize("name", GREEDY)
def test_greedy_answers_are_llama_servers_token_for_token(client, name):
    ours, theirs = post(client, name).json, REQUESTS[name]["answer"]
    assert {key: ours[key] for key in SAME} == {key: theirs[key] for key in SAME}
    assert ours.keys() == theirs.keys() and ours["id_slot"] == 0
    assert ours["generation_settings"].keys() == theirs["generation_settings"].keys() - NOT_KINETIC
    assert ours["timings"].keys() == theirs["timings"].keys()
    for mine, other in zip(ours.get("completion_probabilities", []), theirs.get("completion_probabilities", []),
                           strict=True):
        assert (mine["id"], mine["token"], mine["bytes"]) == (other["id"], other["token"], other["bytes"])
        assert [t["id"] for t in mine["top_logprobs"]] == [t["id"] for t in other["top_logprobs"]]
        assert mine["logprob"] == pytest.approx(other["logprob"], abs=0.25)  # llama.cpp rounds activations


@pytest.mark.parametrize("name", ["apply_template", "tokenize", "detokenize", "completion_fields"])
def test_prompt_routes_answer_as_llama_server(client, name):
    assert post(client, name).json == REQUESTS[name]["answer"]


@pytest.mark.parametrize("name", ["completion_stream", "v1_completions_stream", "v1_chat_stream"])
def test_streams_carry_llama_servers_text_and_fields(client, name):
    events = [json.loads(line[len("data: "):]) for line in post(client, name).text.split("\n\n")
              if line.startswith("data: {")]
    theirs = REQUESTS[name]["answer"]
    text = "".join(e.get("content") or "".join((c.get("delta") or {}).get("content") or c.get("text") or ""
                                               for c in e.get("choices", [])) for e in events)
    assert text == theirs["text"]
    assert theirs["first"].keys() - events[0].keys() == set() and "timings" in events[-1]
    if name == "completion_stream":
        assert all(len(e["completion_probabilities"]) == 1 and len(e["tokens"]) == 1 for e in events[:-1])
        assert events[-1]["stop"] and events[-1]["tokens_predicted"] == len(events) - 1


@pytest.mark.parametrize("name", ["v1_completions", "v1_chat"])
def test_openai_answers_carry_llama_servers_timings(client, name):
    ours, theirs = post(client, name).json, REQUESTS[name]["answer"]
    assert theirs.keys() - ours.keys() == set() and ours["timings"].keys() == theirs["timings"].keys()
    assert ours["choices"][0].get("text", ours["choices"][0].get("message")) == \
        theirs["choices"][0].get("text", theirs["choices"][0].get("message"))


def test_slots_show_llama_servers_fields_of_the_last_request(client):
    post(client, "completion")
    (ours,), (theirs,) = client.simulate_get("/slots").json, REQUESTS["slots"]["answer"]
    assert ours.keys() == theirs.keys() | {"prompt"}
    assert ours["params"].keys() == theirs["params"].keys() - NOT_KINETIC
    assert ours["next_token"][0].keys() == theirs["next_token"][0].keys()
    assert (ours["n_ctx"], ours["is_processing"], ours["prompt"]) == (GOLDEN["context"], False,
                                                                      REQUESTS["completion"]["body"]["prompt"])
    assert ours["next_token"][0]["n_decoded"] == REQUESTS["completion"]["body"]["n_predict"]


def test_a_slot_that_ran_nothing_shows_only_its_own_fields():
    assert slot_report(Slot(id=1), 512) == {"id": 1, "n_ctx": 512, "speculative": False, "is_processing": False}


@pytest.mark.parametrize("change, status, message", [
    ({"input_prefix": None}, 400, '"input_prefix" is required'),
    ({"input_suffix": None}, 400, '"input_suffix" is required'),
    ({"prompt": 5}, 400, '"prompt" must be a string'),
    ({"input_extra": {"text": "x"}}, 400, '"input_extra" must be an array'),
    ({"input_extra": [{"text": 1}]}, 400, 'extra_context chunk must contain a "text" field'),
    ({"input_extra": [{"text": "x", "filename": 2}]}, 400, "\"filename\" field must be a string"),
    ({"input_prefix": [1.5]}, 400, "input_prefix[0] must be a string or a token id"),
])
def test_bad_infill_requests_get_llama_servers_errors(client, change, status, message):
    body = {key: value for key, value in {**REQUESTS["infill"]["body"], **change}.items() if value is not None}
    result = client.simulate_post("/infill", json=body)
    assert result.status_code == status and message in result.json["error"]["message"]


@pytest.mark.parametrize("path, body, status, message", [
    ("/infill", REQUESTS["infill"]["body"], 501,
     "Infill is not supported by this model: prefix token is missing. suffix token is missing. "
     "middle token is missing. "),
    ("/v1/completions", {"prompt": "a", "suffix": "b", "max_tokens": 1}, 400,
     "suffix needs a model whose vocabulary has fill-in-the-middle tokens"),
])
def test_a_model_without_fim_tokens_is_refused(client, served, monkeypatch, path, body, status, message):
    tokenizer = served.session.tokenizer
    monkeypatch.setattr(tokenizer, "special", dataclasses.replace(tokenizer.special, fim_pre_id=None,
                                                                  fim_suf_id=None, fim_mid_id=None))
    result = client.simulate_post(path, json=body)
    assert result.status_code == status and result.json["error"]["message"].startswith(message)
    assert status != 501 or result.json["error"]["type"] == "not_supported_error"


def test_suffix_on_v1_completions_fills_the_middle_as_infill_does(client):
    body = REQUESTS["v1_completions_suffix"]["body"]
    filled = client.simulate_post("/v1/completions", json=body).json["choices"][0]["text"]
    infill = client.simulate_post("/infill", json={"input_prefix": body["prompt"], "input_suffix": body["suffix"],
                                                   "n_predict": body["max_tokens"], "temperature": 0}).json
    assert filled == infill["content"] and "<|fim_prefix|>" in infill["prompt"]


@pytest.mark.parametrize("n_ctx, extra", [
    (1024, ""),
    (2048, "filename\n"),  # n_ctx - n_batch + 2: the extra's last two tokens
    (4096, "<|repo_name|>myproject\n<|file_sep|>x.py\nx = 1\n<|file_sep|>filename\n"),
])
def test_input_extra_keeps_its_end_in_what_the_context_leaves_past_a_batch(served, n_ctx, extra):
    tokenizer = served.session.tokenizer
    tokens = infill_prompt(tokenizer, "a", "b", [Chunk("x = 1\n", "x.py")], [], n_ctx)
    assert tokenizer.decode(tokens) == extra + "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"


CODE = REQUESTS["tokenize"]["body"]["content"]
IDS = [token["id"] for token in REQUESTS["tokenize"]["answer"]["tokens"]]


@pytest.mark.parametrize("prompt, expected", [
    (CODE, CODE),
    ([CODE], CODE),
    (IDS, CODE),
    ([IDS], CODE),
    (["def", *IDS[1:]], CODE),
    ([*IDS, "<|im_end|>"], CODE + "<|im_end|>"),
    ({"prompt_string": CODE}, CODE),
])
def test_prompts_are_text_token_ids_or_both(served, prompt, expected):
    tokenizer = served.session.tokenizer
    assert tokenizer.decode(completion_tokens(tokenizer, prompt)) == expected


@pytest.mark.parametrize("prompt, message", [
    (["one", "two"], "prompt holds 2 prompts"),
    ([1, True], "prompt[1] must be a string or a token id"),
    ([10**9], "prompt[0] must be a string or a token id"),
    ([1, [2]], "prompt[1] must be a string or a token id"),
    (5, "prompt must be a string, token ids"),
])
def test_bad_prompts_are_400s_naming_the_part(served, prompt, message):
    with pytest.raises(ApiError) as refused:
        completion_tokens(served.session.tokenizer, prompt)
    assert refused.value.status == 400 and refused.value.message.startswith(message)


@pytest.mark.parametrize("change, param", [({"post_sampling_probs": True}, "post_sampling_probs"),
                                           ({"n_probs": 21}, "n_probs"), ({"return_tokens": 1}, "return_tokens")])
def test_completion_fields_out_of_reach_are_400s(client, change, param):
    result = post(client, "completion", **change)
    assert result.status_code == 400 and result.json["error"]["param"] == param


@pytest.mark.parametrize("raw, text", [(b"ab", "ab"), (b"a\xc3", "a"), (b"\xe2\x82", ""), (b"\xe2\x82\xac", "€")])
def test_token_text_leaves_out_a_character_cut_at_the_end(raw, text):
    assert token_text(raw) == text


@pytest.mark.parametrize("limit_name", ["max_tokens", "max_completion_tokens"])
def test_n_predicts_aliases_limit_the_answer(client, limit_name):
    body = {key: value for key, value in REQUESTS["completion"]["body"].items() if key != "n_predict"}
    answer = client.simulate_post("/completion", json={**body, limit_name: 3}).json
    assert answer["tokens_predicted"] == 3 and answer["generation_settings"]["n_predict"] == 3


@pytest.mark.parametrize("max_tokens, finish, generated, truncated", [
    (5, "length", 3, True), (5, "length", 5, False), (-1, "length", 9, True), (-1, "stop", 9, False),
])
def test_truncated_means_the_context_filled_before_the_limit(served, max_tokens, finish, generated, truncated):
    run = Run(served, Job([1], {}, max_tokens), lambda: False, finish, usage=Usage(1, generated))
    assert run.truncated is truncated


@pytest.mark.parametrize("prompt, starts_with_bos", [("a", True), (["a", 5], True), ([5, "a"], False), ([5], False)])
def test_bos_goes_only_before_a_first_string(gemma_gguf, prompt, starts_with_bos):
    tokenizer = load_tokenizer(gemma_gguf)
    assert (completion_tokens(tokenizer, prompt)[0] == tokenizer.bos_id) is starts_with_bos


@pytest.mark.parametrize("pieces, n_indent, ended_at, kept", [
    (["x\n", "    y", "\n", "z", "w"], 4, 3, "x\n    y\n"),
    (["x\n", "    y", "\n", "    z", "w"], 4, None, None),
    (["x\n", "\ty\n", "a", "b"], 2, 2, "x\n\t"),  # a tab is one character of indentation
    (["x\n", "  y", "z"], 2, None, None),
    (["x\n", "y", "z"], 1, 2, "x\n"),  # the first line is judged from the token after the one after its newline
])
def test_n_indent_ends_at_a_shallow_line_as_llama_server_judges_it(pieces, n_indent, ended_at, kept):
    limits = LineLimits(n_indent)
    ends = [limits.feed(piece) for piece in pieces]
    assert (ends.index(True) if True in ends else None) == ended_at
    assert limits.cut("".join(pieces)) == (kept if kept is not None else "".join(pieces))


def test_t_max_predict_ms_ends_at_the_first_new_line_past_it():
    limits = LineLimits(t_max_predict_ms=1)
    assert not limits.feed("a")
    time.sleep(0.01)
    assert not limits.feed("b") and limits.feed("c\nd") and limits.ended and limits.cut("abc\nd") == "abc\nd"
