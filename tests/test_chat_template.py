"""Chat templates: byte-for-byte Hugging Face rendering, the sandbox and its bounds, --chat-template-file.

The golden files come from scripts/make_template_golden.py (transformers as the oracle). They hold our
conversations and the expected renderings; the templates are read from the models and llama.cpp's source.
"""

from __future__ import annotations

import copy
import json
import time
from datetime import datetime
from pathlib import Path

import pytest

import kinetic
import kinetic.chat.sandbox
from kinetic.chat import ChatTemplate, load_chat_template
from kinetic.errors import ChatTemplateError

GOLDEN = Path(__file__).parent / "golden" / "templates"
GOLDEN_FILES = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(GOLDEN.glob("*.json"))}
GOLDEN_CASES = [(stem, index) for stem, golden in GOLDEN_FILES.items() for index in range(len(golden["cases"]))]
GEMMA_TEMPLATE = "models/templates/google-gemma-2-2b-it.jinja"
# Templates Kinetic renders otherwise than Hugging Face on purpose, where it follows llama-server (whose
# prompts tests/test_chat_prompts.py compares), and why.
KEPT_DIFFERENCES = {
    "Kimi-K2-Thinking": "the template appends to and pops from a list it makes: Hugging Face's immutable "
    "sandbox refuses that, llama.cpp's Jinja (and Kinetic, for lists a template makes itself) allows it",
}
USER_HI = [{"role": "user", "content": "hi"}]


def fix_clock(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    class FixedDatetime(datetime):
        @classmethod
        def now(cls, tz=None):
            return now

    monkeypatch.setattr(kinetic.chat.sandbox, "datetime", FixedDatetime)


@pytest.fixture(scope="session")
def golden_template(request, llama_cpp_source):
    """golden file stem -> its ChatTemplate, compiled once: a model's own, or one from llama.cpp's source."""
    compiled = {}

    def template(stem: str) -> ChatTemplate:
        if stem not in compiled:
            golden = GOLDEN_FILES[stem]
            if "model" in golden:
                gguf = request.getfixturevalue(f"{golden['model']}_gguf")
                compiled[stem] = load_chat_template(kinetic.open_model(gguf).metadata)
            else:
                source = (llama_cpp_source / golden["template"]).read_text(encoding="utf-8")
                compiled[stem] = ChatTemplate(source, golden["bos_token"], golden["eos_token"])
        return compiled[stem]

    return template


def render_case(template: ChatTemplate, case: dict) -> str:
    return template.render(case["messages"], case["tools"], case["add_generation_prompt"], **case["kwargs"])


def check_against_golden(template: ChatTemplate, case: dict) -> None:
    if "error" in case:
        with pytest.raises(ChatTemplateError) as raised:
            render_case(template, case)
        assert case["error"] in str(raised.value)
    else:
        assert render_case(template, case) == case["expected"]


def kept_difference(stem: str, index: int) -> list:
    """A case Hugging Face refuses and llama-server renders, for a reason KEPT_DIFFERENCES gives."""
    reason = KEPT_DIFFERENCES.get(stem) if "error" in GOLDEN_FILES[stem]["cases"][index] else None
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.parametrize(("stem", "index"), [
    pytest.param(stem, i, marks=kept_difference(stem, i), id=f"{stem}-{GOLDEN_FILES[stem]['cases'][i]['name']}")
    for stem, i in GOLDEN_CASES])
def test_renders_as_hugging_face(stem, index, golden_template, monkeypatch):
    golden = GOLDEN_FILES[stem]
    fix_clock(monkeypatch, datetime.fromisoformat(golden["now"]))
    template = golden_template(stem)
    assert (template.bos_token, template.eos_token) == (golden["bos_token"], golden["eos_token"])
    check_against_golden(template, golden["cases"][index])


def test_goldens_cover_the_families_we_promise():
    names = " ".join(GOLDEN_FILES)
    for family in ("Qwen3-", "Qwen3.5", "Llama-3.1", "Llama-3.2", "Llama-3.3", "Mistral", "gemma", "LFM2",
                   "granite", "DeepSeek", "Hermes", "model-qwen"):
        assert family in names
    assert len(GOLDEN_FILES) >= 14


# --- the sandbox and its bounds -------------------------------------------------------------

FAILING = {
    "raise_exception": ("{{ raise_exception('System role not supported') }}", "System role not supported"),
    "undefined": ("{{ nothing.at.all }}", "'nothing' is undefined"),
    "type_error": ("{{ messages[0].content + 1 }}", "TypeError"),
    "not_iterable": ("{% for x in 5 %}{% endfor %}", "'int' object is not iterable"),
    "mro": ("{{ ''.__class__.__mro__ }}", "unsafe"),
    "globals": ("{{ cycler.__init__.__globals__ }}", "unsafe"),
    "subclasses": ("{{ (0).__class__.__base__.__subclasses__() }}", "unsafe"),
    "function_globals": ("{{ raise_exception.__globals__['os'] }}", "unsafe"),
    "format_escape": ("{{ '{0.__class__.__mro__}'.format(messages) }}", "unsafe"),
    "mutate_input": ("{{ messages.append(messages[0]) }}", "unsafe"),
    "mutate_nested_input": ("{% set kept = messages %}{{ kept.pop() }}", "unsafe"),
    "growing_own_list": ("{% set ns = namespace(items=[]) %}{% for i in range(100000) %}{% for j in range(100000) %}"
                         "{% set _ = ns.items.append(j) %}{% endfor %}{% endfor %}", "loop forever"),
    "namespace_dunder": ("{% set ns = namespace() %}{% set ns.__class__ = 1 %}", "underscore"),
    "dict_type": ("{{ dict.__call__.__globals__ }}", "unsafe"),
    "lipsum_removed": ("{{ lipsum(10 ** 9) }}", "'lipsum' is undefined"),
    "recursion": ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recurses too deeply"),
    "recursive_loop": ("{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}", "recurses too deeply"),
    "huge_repeat": ("{{ 'a' * 10 ** 10 }}", "repeats a value"),
    "huge_power": ("{{ 10 ** (10 ** 10) }}", "power"),
    "doubling_string": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
                        "{% endfor %}", "the limit is"),
    "doubling_by_filter": ("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                           "{% set ns.s = [ns.s, ns.s]|join %}{% endfor %}", "the limit is"),
    "huge_output": ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output grew past"),
    "nested_loops": ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                     "loop forever"),
    "loop_of_joins": ("{% for i in range(100000) %}{{ range(100000)|join }}{% endfor %}", "loop forever"),
    "exponential_macro": ("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                          "{{ f(40) }}", "loop forever"),
}


@pytest.mark.parametrize("name", FAILING)
def test_failing_template_gives_one_line(name):
    source, expected = FAILING[name]
    messages = [{"role": "user", "content": "hi"}]
    kept = copy.deepcopy(messages)
    start = time.monotonic()
    # a template that fails for another reason stops in milliseconds; its wider limit leaves room for a pause of
    # the process (a full garbage collection late in a long test run) that would otherwise fail it by time
    with pytest.raises(ChatTemplateError) as raised:
        ChatTemplate(source, time_limit=0.3 if expected == "loop forever" else 1.5).render(messages)
    assert time.monotonic() - start < 2
    message = str(raised.value)
    assert message.startswith("chat template failed") and expected in message and "\n" not in message
    assert messages == kept


def test_a_template_appends_to_and_pops_from_its_own_lists():
    source = "{% set ns = namespace(ids=[]) %}{% set _ = ns.ids.append('a') %}{% set _ = ns.ids.append('b') %}"
    assert ChatTemplate(source + "{{ ns.ids.pop(0) }}{{ ns.ids }}").render(USER_HI) == "a['b']"


def test_runaway_template_fails_within_the_default_limit():
    start = time.monotonic()
    with pytest.raises(ChatTemplateError, match="loop forever"):
        ChatTemplate("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}").render([])
    assert time.monotonic() - start < 3


def test_failure_names_the_template_line():
    source = "{% for m in messages %}\n{{ m.content }}\n{% if m.role == 'user' %}{{ raise_exception('no users') }}"
    source += "{% endif %}{% endfor %}"
    with pytest.raises(ChatTemplateError, match="^chat template failed on line 3: no users$"):
        ChatTemplate(source).render(USER_HI)


def test_syntax_error_is_reported_when_compiling():
    with pytest.raises(ChatTemplateError, match="^chat template has a syntax error on line 2: "):
        ChatTemplate("{{ bos_token }}\n{% if %}")


def test_a_template_never_changes_the_callers_messages():
    messages = [{"role": "assistant", "content": None, "reasoning_content": "hm", "tool_calls": [{"id": "x"}]}]
    kept = copy.deepcopy(messages)
    source = "{% for m in messages %}{{ m.keys()|list|tojson }}{% endfor %}"
    assert ChatTemplate(source).render(messages) == '["thinking", "role", "reasoning_content", "tool_calls"]'
    assert messages == kept


def test_only_json_values_reach_a_template():
    with pytest.raises(ChatTemplateError, match="only JSON values; got one of type object"):
        ChatTemplate("{{ messages }}").render([{"role": "user", "content": object()}])


def test_deeply_nested_input_is_refused():
    content = []
    for _ in range(5000):
        content = [content]
    with pytest.raises(ChatTemplateError, match="nested too deeply"):
        ChatTemplate("{{ messages }}").render([{"role": "user", "content": content}])


def test_hugging_face_helpers():
    source = ("{{ x|tojson }} {{ x|tojson(indent=1, sort_keys=True, separators=(',', ':'), ensure_ascii=True) }}"
              "{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{{ i }}{% endfor %}"
              "{% generation %}{{ flag }}{% endgeneration %}")
    x = {"b": "é<", "a": [1]}
    expected = json.dumps(x, ensure_ascii=False) + " " + json.dumps(x, indent=1, sort_keys=True, separators=(",", ":"),
                                                                      ensure_ascii=True)
    assert ChatTemplate(source).render([], x=x, flag=True) == expected + "012True"


def test_strftime_now_reads_the_clock(monkeypatch):
    fix_clock(monkeypatch, datetime(2024, 7, 26, 9, 30))
    assert ChatTemplate("{{ strftime_now('%d %b %Y') }}").render([]) == "26 Jul 2024"


def test_variables_a_template_sees():
    source = "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools|tojson }}|{{ enable_thinking }}"
    template = ChatTemplate(source, "<s>", "</s>")
    assert template.render([], tools=[{"name": "f"}], enable_thinking=False) == '<s>|</s>|True|[{"name": "f"}]|False'
    assert template.render([], add_generation_prompt=False) == "<s>|</s>|False|null|"


# --- building it from a model, and --chat-template-file ---------------------------------------


def test_metadata_gives_the_template_and_special_token_text():
    metadata = {
        "tokenizer.chat_template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}",
        "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>"],
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
    }
    assert load_chat_template(metadata).render(USER_HI) == "<s>hi</s>"
    del metadata["tokenizer.ggml.bos_token_id"]
    assert load_chat_template(metadata).render(USER_HI) == "hi</s>"


def test_model_without_template_asks_for_a_file(gemma_gguf):
    with pytest.raises(ChatTemplateError, match="no chat template; pass one with --chat-template-file"):
        load_chat_template(kinetic.open_model(gemma_gguf).metadata)


def test_template_file_overrides_the_models(qwen_gguf, tmp_path):
    path = tmp_path / "plain.jinja"
    path.write_text("{{ bos_token }}[{{ messages[0].content }}]{{ eos_token }}", encoding="utf-8")
    template = load_chat_template(kinetic.open_model(qwen_gguf).metadata, path)
    assert template.render(USER_HI) == "<|endoftext|>[hi]<|im_end|>"


def test_template_file_for_a_model_without_one(gemma_gguf, llama_cpp_source, monkeypatch):
    golden = GOLDEN_FILES[Path(GEMMA_TEMPLATE).stem]
    fix_clock(monkeypatch, datetime.fromisoformat(golden["now"]))
    template = load_chat_template(kinetic.open_model(gemma_gguf).metadata, llama_cpp_source / GEMMA_TEMPLATE)
    assert (template.bos_token, template.eos_token) == (golden["bos_token"], golden["eos_token"])
    for case in golden["cases"]:
        check_against_golden(template, case)


@pytest.mark.parametrize(("content", "expected"), [
    (None, "cannot read the chat template file: No such file or directory"),
    (b"", "the chat template file is empty"),
    (b"\xff\xfe{{ x }}", "not UTF-8 text"),
    (b"{% for %}", "syntax error on line 1"),
])
def test_bad_template_file(content, expected, tmp_path):
    path = tmp_path / "template.jinja"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ChatTemplateError, match=expected):
        load_chat_template({}, path)
