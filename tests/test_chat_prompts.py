"""Chat prompts tokenize as llama-server's: the token ids of every template in llama.cpp's models/templates/.

The golden files come from scripts/make_chat_prompt_golden.py (llama-server's /apply-template then
/tokenize, on a real model). They hold the conversations and llama-server's token ids; the templates are
read from llama.cpp's source, so this test needs no llama-server.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

import kinetic
from kinetic.chat import ChatTemplate, load_chat_template
from kinetic.chat.prompt import chat_prompt_tokens
from kinetic.errors import ChatTemplateError
import kinetic.chat.sandbox
from kinetic.tokenizer import Tokenizer

GOLDEN = Path(__file__).parent / "golden" / "chat_prompts"
GOLDEN_FILES = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(GOLDEN.glob("*.json"))}
GOLDEN_CASES = [(stem, i) for stem, golden in GOLDEN_FILES.items() for i in range(len(golden.get("cases", [])))]

NO_TOOL_USE = ("the template knows nothing of tool use: Kinetic describes the tools in the system message and "
               "writes calls and results in llama.cpp's generic JSON format (kinetic/chat/tool_messages.py); "
               "today's llama-server renders the template without them")
# Templates (or one conversation of a template) whose prompts Kinetic makes otherwise on purpose, and why.
KEPT_DIFFERENCES = {
    "fireworks-ai-llama-3-firefunction-v2": "the template adds a variable nobody defines (`functions`) to a string: "
    "llama.cpp's Jinja engine takes it as empty, Hugging Face's Jinja, which Kinetic renders with, refuses it",
    **{(stem, case): NO_TOOL_USE for stem in ("HuggingFaceTB-SmolLM3-3B", "deepseek-ai-DeepSeek-R1-Distill-Llama-8B",
                                               "google-gemma-2-2b-it", "llama-cpp-deepseek-r1", "llama-cpp-rwkv-world",
                                               "microsoft-Phi-3.5-mini-instruct")
       for case in ("tools_offered", "tool_result")},
    ("google-gemma-4-31B-it-interleaved", "tool_result"): "llama-server moves tool results into the model's turn "
    "for this outdated Gemma 4 template (its workaround::convert_tool_responses_gemma4); Kinetic renders the "
    "template as written, and the current Gemma 4 template (google-gemma-4-31B-it) as llama-server does",
}


@pytest.fixture(scope="session")
def model_metadata(request):
    """model key -> (its GGUF metadata, its Tokenizer), read once."""
    loaded = {}

    def metadata(key: str):
        if key not in loaded:
            meta = kinetic.open_model(request.getfixturevalue(f"{key}_gguf")).metadata
            loaded[key] = meta, Tokenizer.from_metadata(meta)
        return loaded[key]

    return metadata


def fix_date(monkeypatch: pytest.MonkeyPatch, day: str) -> None:
    now = datetime.fromisoformat(day).replace(hour=12)

    class FixedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):
            return now

    monkeypatch.setattr(kinetic.chat.sandbox, "datetime", FixedDatetime)


def case_marks(stem: str, case: str) -> list:
    reason = KEPT_DIFFERENCES.get(stem) or KEPT_DIFFERENCES.get((stem, case))
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize(("stem", "index"), [
    pytest.param(stem, i, marks=case_marks(stem, GOLDEN_FILES[stem]['cases'][i]['name']), id=f"{stem}-{GOLDEN_FILES[stem]['cases'][i]['name']}")
    for stem, i in GOLDEN_CASES])
def test_prompt_tokens_are_llama_servers(stem, index, model_metadata, llama_cpp_source, monkeypatch):
    golden = GOLDEN_FILES[stem]
    case = golden["cases"][index]
    fix_date(monkeypatch, golden["date"])
    metadata, tokenizer = model_metadata(golden["model"])
    template = load_chat_template(metadata, llama_cpp_source / golden["template"])
    if "error" in case:  # llama-server refused it: so does Kinetic
        with pytest.raises(ChatTemplateError):
            chat_prompt_tokens(template, tokenizer, case["messages"], case.get("tools"))
    else:
        assert chat_prompt_tokens(template, tokenizer, case["messages"], case.get("tools")) == case["tokens"]


def test_goldens_cover_every_template(llama_cpp_source):
    templates = {path.stem for path in (llama_cpp_source / "models" / "templates").glob("*.jinja")}
    assert set(GOLDEN_FILES) == templates
    assert {key if isinstance(key, str) else key[0] for key in KEPT_DIFFERENCES} <= templates
    assert [stem for stem, golden in GOLDEN_FILES.items() if "refused" in golden] == []  # llama-server loads them all


def test_a_template_writing_its_bos_gets_one(model_metadata, llama_cpp_source):
    """Gemma's tokenizer adds <bos>, and so does the template: llama-server's prompt has one."""
    metadata, tokenizer = model_metadata("gemma")
    template = load_chat_template(metadata, llama_cpp_source / "models/templates/google-gemma-2-2b-it.jinja")
    tokens = chat_prompt_tokens(template, tokenizer, [{"role": "user", "content": "Hello"}])
    assert tokens.count(tokenizer.bos_id) == 1 and tokens[0] == tokenizer.bos_id


class FakeTokenizer:
    """Tokens are the prompt's characters, after a BOS of -1 (add_bos) and before an EOS of -2 (add_eos)."""

    def __init__(self, add_bos: bool, add_eos: bool = False):
        self.add_bos, self.add_eos = add_bos, add_eos

    def encode(self, text: str, add_special: bool, parse_special: bool) -> list:
        return [-1] * self.add_bos + list(text) + [-2] * self.add_eos


def prompt_text(source: str, messages: list, add_bos: bool = False, **kwargs) -> str:
    tokens = chat_prompt_tokens(ChatTemplate(source, "<s>", "</s>"), FakeTokenizer(add_bos), messages, **kwargs)
    return "".join(t if isinstance(t, str) else f"[{t}]" for t in tokens)


LIST_MESSAGES = "{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}"
NO_SYSTEM = "{% if messages[0].role == 'system' %}{{ raise_exception('no system role') }}{% endif %}" + LIST_MESSAGES
IGNORES_SYSTEM = "{% for m in messages if m.role != 'system' %}{{ m.role }}:{{ m.content }};{% endfor %}"
SYSTEM_AND_USER = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def test_bos_and_eos_written_by_the_template_are_the_tokenizers():
    source = "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"
    assert prompt_text(source, [{"role": "user", "content": "hi"}], add_bos=True) == "[-1]hi</s>"
    assert prompt_text(source, [{"role": "user", "content": "hi"}], add_bos=False) == "<s>hi</s>"
    tokens = chat_prompt_tokens(ChatTemplate(source, "<s>", "</s>"), FakeTokenizer(True, True),
                                [{"role": "user", "content": "hi"}])
    assert tokens == [-1, "h", "i", -2]


def test_a_system_message_the_template_refuses_or_ignores_joins_the_first_user_turn():
    assert prompt_text(NO_SYSTEM, SYSTEM_AND_USER) == "user:be brief\nhi;"
    assert prompt_text(IGNORES_SYSTEM, SYSTEM_AND_USER) == "user:be brief\nhi;"
    assert prompt_text(IGNORES_SYSTEM, SYSTEM_AND_USER[:1]) == ""
    assert prompt_text(LIST_MESSAGES, SYSTEM_AND_USER) == "system:be brief;user:hi;"


def test_a_developer_message_is_a_system_one():
    assert prompt_text(LIST_MESSAGES, [{"role": "developer", "content": "be brief"}]) == "system:be brief;"


def test_no_tools_leaves_tools_undefined_and_content_is_never_missing():
    source = "{{ tools is defined }}|{% for m in messages %}{{ m.content is defined }}{% endfor %}"
    assert prompt_text(source, [{"role": "assistant", "content": None}]) == "False|True"


def test_content_parts_are_joined_for_a_template_that_takes_strings():
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert prompt_text(LIST_MESSAGES, [{"role": "user", "content": parts}]) == "user:one\ntwo;"


def test_thinking_is_on_where_the_template_reasons_and_the_caller_decides():
    reasons = "A{{ '' if enable_thinking else '<think></think>' }}"
    assert prompt_text(reasons, []) == "A"
    assert prompt_text(reasons, [], enable_thinking=False) == "A<think></think>"
    assert prompt_text("{{ 'on' if enable_thinking else 'off' }}", []) == "off"
    assert prompt_text("{{ enable_thinking is defined }}", []) == "True"


def test_earlier_reasoning_is_kept_unless_the_caller_says_otherwise():
    source = "{{ preserve_thinking }} {{ clear_thinking }}"
    assert prompt_text(source, []) == "True False"
    assert prompt_text(source, [], preserve_reasoning=False) == "False True"


def test_earlier_reasoning_reaches_the_template_as_its_family_takes_it():
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "thinking": "greet", "content": "hello"}]
    source = "{% for m in messages %}{{ m.reasoning_content }}/{{ m.thinking }};{% endfor %}"
    assert prompt_text(source, messages) == "/;greet/;"
    assert prompt_text("{#<|channel|>#}" + source, messages) == "/;greet/greet;"
    ministral = "{#[SYSTEM_PROMPT][TOOL_CALLS][ARGS]#}{% for m in messages %}{{ m.content | tojson }};{% endfor %}"
    assert prompt_text(ministral, messages) == (
        '"hi";[{"type": "thinking", "thinking": "greet"}, {"type": "text", "text": "hello"}];')
