"""The tool-call formats of kinetic/tools/formats/: reading llama.cpp's test-chat.cpp calls
(tests/golden/tool_calls/), telling a template's format from its source, and the grammar each format's
calls_rule gives, matched token by token by llguidance on Qwen2.5-Coder's real vocabulary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import llguidance
import pytest

from kinetic.constraints.matcher import grammar_tokenizer
from kinetic.tools import Markup, ToolRequest
from kinetic.tools.formats import FORMATS, format_for
from kinetic.tools.formats.generic import GENERIC
from kinetic.tools.formats.lfm2 import LFM2
from kinetic.tools.grammar import markup_for, tool_grammar
from kinetic.tools.request import Tool

GOLDEN = Path(__file__).parent / "golden" / "tool_calls"
BY_NAME = {fmt.name: fmt for fmt in (*FORMATS, GENERIC)}
TOOLS = json.loads((GOLDEN / "tools.json").read_text())["tools"]


def golden_cases() -> list:
    return [pytest.param(case, id=f"{path.stem}: {case['case']}")
            for path in sorted(GOLDEN.glob("*.json")) if path.stem != "tools"
            for case in json.loads(path.read_text())["cases"]]


def tool(name: str) -> Tool:
    return Tool(name, "", TOOLS[name])


@pytest.mark.parametrize("case", golden_cases())
def test_reads_llama_cpp_calls(case):
    fmt = BY_NAME[case["format"]]
    calls, spanned = fmt.read_calls(case["text"], [tool(name) for name in case["tools"]])
    assert spanned == len(case["text"])
    assert [(call.name, json.loads(call.arguments)) for call in calls] == [
        (call["name"], call["arguments"]) for call in case["calls"]]
    for call, expected in zip(calls, case["calls"]):
        assert call.id == expected["id"] if "id" in expected else call.id.startswith("call_")


NOT_CALLS = [
    ("Qwen3 Coder", "<tool_call>\n<function=special_function>\n<parameter=arg1>\n1\n"),
    ("Qwen3 Coder", "<tool_call>\n<function=special_function>\n</tool_call>"),
    ("Qwen3 Coder", "<tool_call>\n{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}\n</tool_call>"),
    ("LFM2", "<|tool_call_start|>[special_function(1)]<|tool_call_end|>"),
    ("LFM2", "<|tool_call_start|>[__import__('os').system('ls')]<|tool_call_end|>"),
    ("LFM2", "<|tool_call_start|>[special_function(arg1=open('/etc/passwd'))]<|tool_call_end|>"),
    ("LFM2", "<|tool_call_start|>[special_function(arg1=1)"),
    ("LFM2", "<|tool_call_start|>special_function(arg1=1)<|tool_call_end|>"),
    ("Llama 3.x", "{\"name\": \"special_function\", \"parameters\": [1]}"),
    ("Llama 3.x", "{\"name\": \"special_function\", \"parameters\": {\"arg1\": "),
    ("Llama 3.x", "{\"answer\": 42}"),
    ("Llama 3.x", "<|python_tag|>print('hey')"),
    ("Mistral Nemo", "[TOOL_CALLS][{\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}"),
    ("Mistral Nemo", "[TOOL_CALLS]{\"name\": \"special_function\"}"),
    ("Ministral 3", "[TOOL_CALLS]special_function[ARGS]{\"arg1\": "),
    ("Ministral 3", "[TOOL_CALLS]special_function{\"arg1\": 1}"),
    ("Mistral Small 3.2", "[TOOL_CALLS]special_function[CALL_ID]123456789[ARGS][1]"),
    ("DeepSeek R1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n"
                    "{\"arg1\": 1}```"),
    ("DeepSeek V3.1", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>special_function<｜tool▁sep｜>{\"arg1\": "
                      "<｜tool▁call▁end｜>"),
    ("Generic", "{\"response\": \"Hello, world!\"}"),
    ("Generic", "{\"tool_call\": {\"name\": \"special_function\", \"arguments\": {\"arg1\": 1}}"),
    ("Generic", "{\"tool_calls\": []}"),
]


@pytest.mark.parametrize("name, text", NOT_CALLS)
def test_text_that_is_no_call_reads_as_none(name, text):
    assert BY_NAME[name].read_calls(text, [tool("special_function")]) == ([], 0)


# Templates of llama.cpp's models/templates/ whose calls llama.cpp's test-chat.cpp reads in each format; the
# last three render no tools at all.
DETECTED = {
    "Qwen3-Coder.jinja": "Qwen3 Coder", "Qwen3.5-4B.jinja": "Qwen3 Coder", "StepFun3.5-Flash.jinja": "Qwen3 Coder",
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "Qwen3 Coder",
    "LFM2-8B-A1B.jinja": "LFM2", "LFM2.5-8B-A1B.jinja": "LFM2", "LFM2.5-Instruct.jinja": "LFM2",
    "Qwen-Qwen2.5-7B-Instruct.jinja": "Hermes 2 Pro", "Qwen-Qwen3-0.6B.jinja": "Hermes 2 Pro",
    "Qwen-QwQ-32B.jinja": "Hermes 2 Pro", "MiMo-VL.jinja": "Hermes 2 Pro", "Reka-Edge.jinja": "Hermes 2 Pro",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": "Hermes 2 Pro",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": "Hermes 2 Pro",
    "meta-llama-Llama-3.1-8B-Instruct.jinja": "Llama 3.x", "meta-llama-Llama-3.2-3B-Instruct.jinja": "Llama 3.x",
    "meta-llama-Llama-3.3-70B-Instruct.jinja": "Llama 3.x",
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": "Mistral Nemo",
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": "Mistral Small 3.2",
    "mistralai-Ministral-3-14B-Reasoning-2512.jinja": "Ministral 3",
    "unsloth-mistral-Devstral-Small-2507.jinja": "Ministral 3",
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": "DeepSeek R1",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja": "DeepSeek R1", "llama-cpp-deepseek-r1.jinja": "DeepSeek R1",
    "deepseek-ai-DeepSeek-V3.1.jinja": "DeepSeek V3.1",
    "google-gemma-2-2b-it.jinja": "Generic", "microsoft-Phi-3.5-mini-instruct.jinja": "Generic",
    "llama-cpp-rwkv-world.jinja": "Generic",
}


@pytest.mark.parametrize("template, name", DETECTED.items())
def test_detects_the_format_of_llama_cpp_templates(llama_cpp_source, template, name):
    source = (llama_cpp_source / "models" / "templates" / template).read_text()
    assert format_for(source).name == name
    assert format_for(source, knows_tool_use=False) is GENERIC


# Each format's own answers calling the tools below: one call, two calls (None where the format writes one
# call only), a call to a function that is not a tool, and one that leaves out a required argument.
WEATHER = Tool("get_weather", "", {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
COUNT = Tool("special_function_with_opt", "", TOOLS["special_function_with_opt"])
XML = "<tool_call>\n<function={}>\n{}</function>\n</tool_call>"
LFM = "<|tool_call_start|>[{}]<|tool_call_end|>"
HERMES = '<tool_call>\n{{"name": "{}", "arguments": {}}}\n</tool_call>'
NEMO = '[TOOL_CALLS][{}]'
NEMO_CALL = '{{"name": "{}", "arguments": {}, "id": "abcdefghi"}}'
R1 = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{}\n```json\n{}\n```<｜tool▁call▁end｜>"
V31 = "<｜tool▁call▁begin｜>{}<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
DS = "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>"
CITY, ARG1, ARG2 = '{"city": "Paris"}', '{"arg1": 1}', '{"arg2": 2}'
WEATHER_XML = "<parameter=city>\nParis\n</parameter>\n"
ARG1_XML, ARG2_XML = "<parameter=arg1>\n1\n</parameter>\n", "<parameter=arg2>\n2\n</parameter>\n"
ANSWERS = {
    "Qwen3 Coder": (XML.format("get_weather", WEATHER_XML),
                    XML.format("get_weather", WEATHER_XML) + "\n" + XML.format(COUNT.name, ARG1_XML),
                    XML.format("get_time", WEATHER_XML), XML.format(COUNT.name, ARG2_XML)),
    "LFM2": (LFM.format('get_weather(city="Paris")'), LFM.format(f'get_weather(city="Paris"), {COUNT.name}(arg1=1)'),
             LFM.format('get_time(city="Paris")'), LFM.format(COUNT.name + "(arg2=2)")),
    "Hermes 2 Pro": (HERMES.format("get_weather", CITY), HERMES.format("get_weather", CITY) + "\n" + HERMES.format(
        COUNT.name, ARG1), HERMES.format("get_time", CITY), HERMES.format(COUNT.name, ARG2)),
    "Llama 3.x": ('{"name": "get_weather", "parameters": %s}' % CITY, None,
                  '{"name": "get_time", "parameters": %s}' % CITY,
                  '{"name": "%s", "parameters": %s}' % (COUNT.name, ARG2)),
    "Mistral Nemo": (NEMO.format(NEMO_CALL.format("get_weather", CITY)),
                     NEMO.format(NEMO_CALL.format("get_weather", CITY) + ", " + NEMO_CALL.format(COUNT.name, ARG1)),
                     NEMO.format(NEMO_CALL.format("get_time", CITY)), NEMO.format(NEMO_CALL.format(COUNT.name, ARG2))),
    "Ministral 3": ("[TOOL_CALLS]get_weather[ARGS]" + CITY,
                    "[TOOL_CALLS]get_weather[ARGS]" + CITY + "[TOOL_CALLS]" + COUNT.name + "[ARGS]" + ARG1,
                    "[TOOL_CALLS]get_time[ARGS]" + CITY, "[TOOL_CALLS]" + COUNT.name + "[ARGS]" + ARG2),
    "Mistral Small 3.2": ("[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]" + CITY,
                          "[TOOL_CALLS]get_weather[CALL_ID]abcdefghi[ARGS]" + CITY + "[TOOL_CALLS]" + COUNT.name
                          + "[CALL_ID]123456789[ARGS]" + ARG1,
                          "[TOOL_CALLS]get_time[CALL_ID]abcdefghi[ARGS]" + CITY,
                          "[TOOL_CALLS]" + COUNT.name + "[CALL_ID]abcdefghi[ARGS]" + ARG2),
    "DeepSeek R1": (DS.format(R1.format("get_weather", CITY)),
                    DS.format(R1.format("get_weather", CITY) + R1.format(COUNT.name, ARG1)),
                    DS.format(R1.format("get_time", CITY)), DS.format(R1.format(COUNT.name, ARG2))),
    "DeepSeek V3.1": (DS.format(V31.format("get_weather", CITY)),
                      DS.format(V31.format("get_weather", CITY) + V31.format(COUNT.name, ARG1)),
                      DS.format(V31.format("get_time", CITY)), DS.format(V31.format(COUNT.name, ARG2))),
    "Generic": ('{"tool_call": {"name": "get_weather", "arguments": %s}}' % CITY,
                '{"tool_calls": [{"name": "get_weather", "arguments": %s}, {"name": "%s", "arguments": %s}]}' % (
                    CITY, COUNT.name, ARG1),
                '{"tool_call": {"name": "get_time", "arguments": %s}}' % CITY,
                '{"tool_call": {"name": "%s", "arguments": %s}}' % (COUNT.name, ARG2)),
}


@pytest.fixture(scope="module")
def qwen(qwen_gguf):
    import kinetic
    from kinetic.tokenizer import Tokenizer

    return Tokenizer.from_metadata(kinetic.open_model(qwen_gguf).metadata)


def accepts(grammar, llg_tokenizer, tokens) -> bool:
    matcher = llguidance.LLMatcher(llg_tokenizer, grammar.definition)
    assert not matcher.is_error(), matcher.get_error()
    return matcher.consume_tokens(tokens) and matcher.is_accepting()


@pytest.mark.parametrize("name", ANSWERS)
@pytest.mark.parametrize("choice", ["required", "auto"])
@pytest.mark.parametrize("parallel", [False, True])
def test_grammar_holds_calls_to_the_format(qwen, name, choice, parallel):
    fmt = BY_NAME[name]
    request = ToolRequest.read([function(WEATHER), function(COUNT)], choice, parallel)
    grammar = tool_grammar(fmt, request, markup_for(qwen, fmt), None)
    llg = grammar_tokenizer(qwen)

    def ok(text: str) -> bool:
        return accepts(grammar, llg, qwen.encode(text, add_special=False, parse_special=True))

    one, two, unknown, missing = ANSWERS[name]
    assert ok(one)
    assert not ok(unknown)
    assert not ok(missing)
    if two is not None:
        assert ok(two) == parallel
    assert ok("The weather in Paris is sunny.") == (choice == "auto")

def function(tool: Tool) -> dict:
    return {"type": "function", "function": {"name": tool.name, "parameters": tool.parameters}}


class ByteVocabulary:
    """A vocabulary of the 256 bytes and a format's markers as special (never text) tokens, for the grammars
    of formats whose markers a model's vocabulary holds as control tokens (LFM2's, Mistral's, DeepSeek's)."""

    def __init__(self, markers: tuple[str, ...]):
        self.markers = markers
        self.tokens = [bytes([byte]) for byte in range(256)] + [marker.encode() for marker in markers] + [b"<eos>"]
        self.special_token_ids = list(range(256, len(self.tokens)))
        self.eos_token_id, self.bos_token_id = len(self.tokens) - 1, None

    def __call__(self, text: bytes) -> list[int]:
        return list(text)

    def encode(self, text: str) -> list[int]:
        """Each marker its token, the rest byte by byte."""
        pieces = re.split("(" + "|".join(map(re.escape, self.markers)) + ")", text)
        return [token for piece in pieces for token in (
            [256 + self.markers.index(piece)] if piece in self.markers else list(piece.encode()))]

    def markup(self) -> Markup:
        """The markers as special tokens, named by their id where llguidance cannot name them by their text."""
        ids = {marker: 256 + i for i, marker in enumerate(self.markers) if not re.fullmatch(r"<[^<>\s]+>", marker)}
        return Markup(frozenset(self.markers), ids)


@pytest.mark.parametrize("name", [name for name in ANSWERS if any(marker in ANSWERS[name][0]
                                                                  for marker in BY_NAME[name].markers)])
@pytest.mark.parametrize("parallel", [False, True])
def test_grammar_writes_markers_as_special_tokens(name, parallel):
    fmt = BY_NAME[name]
    vocabulary = ByteVocabulary(fmt.markers)
    llg = llguidance.LLTokenizer(llguidance.TokenizerWrapper(vocabulary))
    grammar = tool_grammar(fmt, ToolRequest.read([function(WEATHER), function(COUNT)], "required", parallel),
                           vocabulary.markup(), None)
    one, two, unknown, missing = ANSWERS[name]
    assert accepts(grammar, llg, vocabulary.encode(one))
    assert not accepts(grammar, llg, list(one.encode())), "the markers spelled as text"
    assert not accepts(grammar, llg, vocabulary.encode(unknown))
    assert not accepts(grammar, llg, vocabulary.encode(missing))
    if two is not None:
        assert accepts(grammar, llg, vocabulary.encode(two)) == parallel


OPTIONAL = Tool("f", "", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"},
                                                          "c": {"type": "boolean"}}, "required": ["b"]})


@pytest.mark.parametrize("arguments, written", [
    ('b="x"', True), ('a=1, b="x"', True), ('b="x", c=True', True), ('a=-2, b="x", c=False', True),
    ("", False), ("a=1", False), ('b="x", a=1', False), ('a=1, b="x", c=1', False), ('a=1.5, b="x"', False),
    (', b="x"', False), ('b="x",', False),
])
def test_keyword_arguments_in_schema_order_required_ones_always(arguments, written):
    """LFM2's keyword arguments (rules.in_order): the schema's order, optional ones left out at will, each value
    a literal of its type."""
    llg = llguidance.LLTokenizer(llguidance.TokenizerWrapper(ByteVocabulary(())))
    grammar = tool_grammar(LFM2, ToolRequest.read([function(OPTIONAL)], "required", False), Markup(), None)
    text = f"<|tool_call_start|>[f({arguments})]<|tool_call_end|>"
    assert accepts(grammar, llg, list(text.encode())) == written
