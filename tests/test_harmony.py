"""gpt-oss's harmony answers (kinetic.chat.harmony, kinetic.tools.formats.harmony) read as llama.cpp reads them:
the answers and expected messages of llama.cpp's tests/test-chat.cpp (its GPT-OSS cases), fed whole and a
character at a time; the format found in its template; the call grammar on a vocabulary holding the markers
as special tokens; and the markers a harmony chat shows as text on a gpt-oss vocabulary."""

from __future__ import annotations

import json

import llguidance
import pytest

from kinetic.chat.harmony import MARKERS, HarmonySplit
from kinetic.server.chat_answer import ChatAnswer, Delta
from kinetic.server.served import Job
from kinetic.tools import ToolRequest
from kinetic.tools.formats import format_for
from kinetic.tools.formats.harmony import HARMONY
from kinetic.tools.grammar import tool_grammar
from kinetic.tools.request import Tool
from test_tool_formats import ByteVocabulary, accepts, function

SPECIAL = Tool("special_function", "", {"type": "object", "properties": {"arg1": {"type": "integer"}},
                                        "required": ["arg1"]})
EDIT = Tool("edit", "", {"type": "object", "properties": {"oldString": {"type": "string"},
                                                          "newString": {"type": "string"},
                                                          "replaceAll": {"type": "boolean"}},
                         "required": ["oldString", "newString"]})
THINKING, HELLO = "I'm\nthinking", "Hello, world!\nWhat's up?"
CALL = [("special_function", {"arg1": 1})]
EDIT_ARGUMENTS = {"oldString": "if (part < railCount - 1) {", "newString": "if (part < 4) {", "replaceAll": False}
# (answer, reasoning, content, calls) of test-chat.cpp's GPT-OSS cases
CASES = {
    "final channel": ("<|channel|>final<|message|>" + HELLO, "", HELLO, []),
    "commentary channel": ("<|channel|>commentary<|message|>" + HELLO, "", HELLO, []),
    "analysis then final": (f"<|channel|>analysis<|message|>{THINKING}<|end|><|start|>assistant<|channel|>final"
                            f"<|message|>{HELLO}", THINKING, HELLO, []),
    "analysis only, partial": (f"<|channel|>analysis<|message|>{THINKING}", THINKING, "", []),
    "recipient in the role header": (' to=functions.special_function<|channel|>analysis<|message|>{"arg1": 1}',
                                     "", "", CALL),
    "recipient in the channel header": ('<|channel|>analysis to=functions.special_function<|message|>{"arg1": 1}',
                                        "", "", CALL),
    "a constraint": (' to=functions.special_function<|channel|>analysis <|constrain|>json<|message|>{"arg1": 1}',
                     "", "", CALL),
    "commentary call": ('<|channel|>commentary to=functions.special_function<|message|>{"arg1": 1}', "", "", CALL),
    "reasoning, then a call": (f"<|channel|>analysis<|message|>{THINKING}<|end|><|start|>assistant "
                               'to=functions.special_function<|channel|>analysis<|message|>{"arg1": 1}',
                               THINKING, "", CALL),
    "complex call": ("<|channel|>analysis<|message|>Thinking about edit...<|end|><|start|>assistant<|channel|>"
                     "commentary to=functions.edit <|constrain|>json<|message|>" + json.dumps(EDIT_ARGUMENTS),
                     "Thinking about edit...", "", [("edit", EDIT_ARGUMENTS)]),
    "structured output": ("<|channel|>analysis<|message|>I need to output the invoice details in JSON<|end|>"
                          '<|start|>assistant<|channel|>final <|constrain|>json<|message|>{"amount": 123.45}',
                          "I need to output the invoice details in JSON", '{"amount": 123.45}', []),
    "built-in tool, recipient in the role header": (
        "<|channel|>analysis<|message|>I will execute python to say hello<|end|><|start|>assistant to=container.exec"
        "<|channel|>commentary<|message|>python3 -c 'print(\"hello\")'", "I will execute python to say hello", "", []),
    "built-in tool, recipient in the channel header": (
        "<|channel|>analysis<|message|>I will execute python to say hello<|end|><|start|>assistant<|channel|>"
        "commentary to=python <|constrain|>code<|message|>print(\"hello\")", "I will execute python to say hello",
        "", []),
    "to=assistant before the reasoning": (f"<|channel|>commentary to=assistant<|channel|>analysis<|message|>{THINKING}"
                                          f"<|end|><|start|>assistant<|channel|>final<|message|>{HELLO}",
                                          THINKING, HELLO, []),
    "to=assistant before the answer": (f"<|channel|>analysis<|message|>{THINKING}<|end|><|start|>assistant<|channel|>"
                                       f"commentary to=assistant<|channel|>final<|message|>{HELLO}",
                                       THINKING, HELLO, []),
}


def answer_of(text: str, step: int) -> Delta:
    job = Job(prompt=[], overrides={}, max_tokens=0, harmony=True, tool_format=HARMONY, tool_functions=(SPECIAL, EDIT))
    answer = ChatAnswer(job)
    total = Delta()
    for at in range(0, len(text), step):
        total += answer.feed(text[at : at + step])
    return total + answer.finish()


@pytest.mark.parametrize("step", [1, 1000])
@pytest.mark.parametrize("case", CASES)
def test_reads_answers_as_llama_cpp(case, step):
    text, reasoning, content, calls = CASES[case]
    got = answer_of(text, step)
    assert (got.reasoning, got.content) == (reasoning, content)
    assert [(call.name, json.loads(call.arguments)) for call in got.calls] == calls


def test_text_that_is_not_harmony_is_content():
    split = HarmonySplit()
    text = "plain words " * 30
    reasoning, content = split.feed(text)
    rest = split.finish()
    assert reasoning + rest[0] == "" and content + rest[1] == text


def test_the_gpt_oss_template_writes_harmony(llama_cpp_source):
    source = (llama_cpp_source / "models" / "templates" / "openai-gpt-oss-120b.jinja").read_text()
    assert format_for(source) is HARMONY
    llm_jp = (llama_cpp_source / "models" / "templates" / "llm-jp-llm-jp-4.1-8b-thinking.jinja").read_text()
    assert format_for(llm_jp) is not HARMONY


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_the_grammar_holds_a_call(choice):
    vocabulary = ByteVocabulary(HARMONY.markers)
    llg = llguidance.LLTokenizer(llguidance.TokenizerWrapper(vocabulary))
    grammar = tool_grammar(HARMONY, ToolRequest.read([function(SPECIAL)], choice, False), vocabulary.markup(), None)

    def ok(text: str) -> bool:
        return accepts(grammar, llg, vocabulary.encode(text))

    assert ok(' to=functions.special_function<|channel|>commentary <|constrain|>json<|message|>{"arg1": 1}')
    assert ok(' to=functions.special_function<|message|>{"arg1": 1}')
    assert not ok(' to=functions.get_time<|message|>{"arg1": 1}')
    assert not ok(' to=functions.special_function<|message|>{"arg2": 1}')
    assert not ok(" to=functions.special_function<|channel|>commentary<|message|>{\"arg1\": 1}".replace(
        "<|message|>", "&lt;message&gt;"))


def test_a_harmony_vocabulary_shows_the_markers_as_text(tmp_path):
    """In a vocabulary of o200k_harmony's control tokens, the markers come out as text where other control
    tokens do not (llama.cpp's vocabulary rules, kinetic.tokenizer.special_ids), so the answer can be read."""
    from kinetic import open_model
    from kinetic.testing.gguf_factory import Dims, write_random_model
    from kinetic.tokenizer import Tokenizer

    dims, controls = Dims(), [*MARKERS, "<|return|>", "<|call|>"]
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *controls]
    tokens += [f"tok{i}" for i in range(dims.n_vocab - len(tokens))]
    kinds = [3, 3, 3] + [6] * 256 + [3] * len(controls) + [1] * (len(tokens) - 259 - len(controls))
    path = write_random_model(tmp_path / "oss.gguf", "gpt-oss", dims, "F32", metadata={
        "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": [0.0] * len(tokens),
        "tokenizer.ggml.token_type": kinds})
    tokenizer = Tokenizer.from_metadata(open_model(path).metadata)
    detokenizer = tokenizer.detokenizer(False)
    assert [detokenizer.feed(259 + i) for i in range(len(controls))] == [*MARKERS, "", ""]
    assert {tokenizer.is_eog(259 + i) for i in range(len(MARKERS))} == {False}


INVOICE = {"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"],
           "additionalProperties": False}


@pytest.mark.parametrize("text, held", [
    ('<|channel|>analysis<|message|>I need JSON.<|end|><|start|>assistant<|channel|>final <|constrain|>json'
     '<|message|>{"amount": 123.45}', True),
    ('<|channel|>final<|message|>{"amount": 1}', True),
    ('<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>final<|message|>{"amount": "a"}', False),
    ('<|channel|>final<|message|>{"amount": 1, "b": 2}', False),
    ('{"amount": 1}', False),
    ('<|channel|>commentary<|message|>{"amount": 1}', False),
])
def test_a_json_answer_may_reason_first_then_is_json(text, held):
    """response_format on gpt-oss: llama.cpp's grammar lets the analysis message come first, then holds the final
    message to the schema."""
    from kinetic.tools.formats.harmony import json_answer

    vocabulary = ByteVocabulary(HARMONY.markers)
    llg = llguidance.LLTokenizer(llguidance.TokenizerWrapper(vocabulary))
    assert accepts(json_answer(INVOICE, vocabulary.markup()), llg, vocabulary.encode(text)) == held
