"""JSON Schemas as llama.cpp's json-schema-to-grammar reads them: the schemas of its own tests.

tests/golden/json_schemas.json comes from scripts/make_json_schema_cases.py (llama.cpp's
tests/test-json-schema-to-grammar.cpp, each case's name, whether llama.cpp accepts the schema and the schema;
with the two recursive-$ref documents its main() checks on their own).
Every schema llama.cpp accepts, Kinetic accepts, and strings drawn from its grammar with random logits over
Qwen's vocabulary validate against the schema (the `jsonschema` package, an independent check); every schema
llama.cpp refuses, Kinetic refuses with a message naming the keyword at fault.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import kinetic
from kinetic.constraints import Grammar, GrammarError, Matcher
from kinetic.constraints.json_schema import as_llama_cpp_reads
from kinetic.tokenizer import Tokenizer

GOLDEN = json.loads((Path(__file__).parent / "golden" / "json_schemas.json").read_text(encoding="utf-8"))
CASES = {case["name"]: case for case in GOLDEN["cases"]}
ACCEPTED = [name for name, case in CASES.items() if case["llama_cpp"] == "SUCCESS"]

# Schemas llama.cpp accepts and Kinetic refuses on purpose, and why.
KEPT_DIFFERENCES = {
    "unsupported regexp in a property": "llama.cpp drops a pattern it cannot convert (look-ahead here) and lets any "
    "string through, so its output need not match; llguidance matches patterns with finite automata, which have "
    "no look-around, and Kinetic answers a 400 naming the pattern rather than ignore part of the schema",
}
# The refused schemas, and the keyword each message must name.
REFUSED = {
    "unknown type": "(keyword type at /type)",
    "invalid type": "(keyword type at /type)",
    "regexp with unbalanced parentheses": "(keyword pattern at /pattern)",
}
# Schemas llama.cpp reads otherwise than JSON Schema 2020-12 (which `jsonschema` checks by), written by hand as
# it reads them (common/json-schema.cpp, build_array): `items` as an array is a tuple, the older drafts'
# prefixItems; `prefixItems` as one schema is the schema of every item, unless `items` is given.
READ_AS = {
    "exotic formats": {"prefixItems": CASES["exotic formats"]["schema"]["items"]},
    "string array": {"type": "array", "items": {"type": "string"}},
    "nullable string array": {"type": ["array", "null"], "items": {"type": "string"}},
    "array with empty items and prefixItems": {"type": "array", "items": {}},
}
# Patterns searched anywhere in a string: random tokens seldom put the text they need before a closing quote,
# so no sample may end within the cap.
SELDOM_COMPLETE = {"regexp with top-level alternation", "unanchored regexp"}

MOST_TOKENS = 48
# Per sample, how much the random logits favour the tokens made only of `"`, `}`, `]` and `:`: 0 draws any token,
# 3 mostly closes strings, objects and arrays where they may close, so that most samples end within the cap.
PUNCTUATION_WEIGHTS = (3, 0, 3, 3)
PUNCTUATION = re.compile(rb'["}\]:]+')


def marks(name: str) -> list:
    reason = KEPT_DIFFERENCES.get(name)
    return [pytest.mark.xfail(strict=True, raises=GrammarError, reason=reason)] if reason else []


@pytest.fixture(scope="module")
def qwen_tokenizer(qwen_gguf) -> Tokenizer:
    return Tokenizer.from_metadata(kinetic.open_model(qwen_gguf).metadata)


@pytest.fixture(scope="module")
def punctuation(qwen_tokenizer) -> np.ndarray:
    """1.0 for each token made of JSON punctuation only, else 0."""
    return np.array([PUNCTUATION.fullmatch(qwen_tokenizer.token_bytes(i, special=True)) is not None
                     for i in range(qwen_tokenizer.n_vocab)], np.float32)


def sample(grammar: Grammar, tokenizer: Tokenizer, rng: np.random.Generator, bias: np.ndarray) -> str | None:
    """The argmax of random logits (plus bias) under the grammar's mask, token after token, until an
    end-of-generation token is picked (the text) or the cap is reached (None)."""
    matcher, tokens, ends = Matcher(grammar, tokenizer), [], set(tokenizer.eog_ids) | {tokenizer.eos_id}
    for _ in range(MOST_TOKENS):
        token = int(np.argmax(matcher.mask(rng.standard_normal(tokenizer.n_vocab, dtype=np.float32) + bias)))
        if token in ends:
            return tokenizer.decode(tokens, special=False)
        matcher.accept(token)
        tokens.append(token)
    return None


@pytest.mark.parametrize("name", [pytest.param(name, marks=marks(name)) for name in ACCEPTED])
def test_what_llama_cpp_accepts_is_accepted_and_every_sample_validates(name, qwen_tokenizer, punctuation):
    grammar = Grammar.from_json_schema(CASES[name]["schema"])
    rng = np.random.default_rng(ACCEPTED.index(name))
    samples = [sample(grammar, qwen_tokenizer, rng, weight * punctuation) for weight in PUNCTUATION_WEIGHTS]
    complete = [text for text in samples if text is not None]
    schema = READ_AS.get(name, CASES[name]["schema"])
    for text in complete:
        jsonschema.validate(json.loads(text), schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    assert complete or name in SELDOM_COMPLETE


@pytest.mark.parametrize("name", [name for name, case in CASES.items() if case["llama_cpp"] == "FAILURE"])
def test_what_llama_cpp_refuses_is_refused_naming_the_keyword(name):
    with pytest.raises(GrammarError) as error:
        Grammar.from_json_schema(CASES[name]["schema"])
    assert REFUSED[name] in str(error.value)


@pytest.mark.parametrize("schema, keyword", [
    ({"properties": {"a/b": {"type": "string", "pattern": "(?=a)"}}}, "(keyword pattern at /properties/a~1b/pattern)"),
    ({"patternProperties": {"(?<=x)": {}}}, "(keyword patternProperties at /patternProperties/(?<=x))"),
    ({"items": {"type": "string", "format": "zip"}}, "(keyword format at /items/format)"),
    ({"properties": {"next": {"$ref": "#/$defs/node"}}}, "(keyword $ref at /properties/next/$ref)"),
    ({"anyOf": [{"type": "array", "uniqueItems": True}]}, "(keyword uniqueItems at /anyOf/0/uniqueItems)"),
    ({"type": "string", "minLength": -1}, "(keyword minLength at /minLength)"),
    ({"type": "object", "properties": {"type": {"type": 7}}}, "(keyword type)"),  # two: which one is not known
], ids=["pattern", "pattern-property", "format", "ref", "unimplemented", "bad-count", "type-twice"])
def test_a_refused_schema_names_the_keyword_and_its_place(schema, keyword):
    with pytest.raises(GrammarError) as error:
        Grammar.from_json_schema(schema)
    assert str(error.value).endswith(keyword)


def test_prefix_items_as_one_schema_is_read_as_llama_cpp_reads_it_wherever_it_is():
    schema = {"type": "object", "properties": {
        "prefixItems": {"type": "string"},  # a property of that name, not the keyword
        "scores": {"type": "array", "prefixItems": {"type": "integer"}},
        "pairs": {"type": "array", "items": {"prefixItems": [{"type": "string"}, {"type": "integer"}]}},
        "kept": {"type": "array", "items": {"type": "boolean"}, "prefixItems": {"type": "integer"}}}}
    read = as_llama_cpp_reads(schema)
    assert read["properties"]["prefixItems"] == {"type": "string"}
    assert read["properties"]["scores"] == {"type": "array", "items": {"type": "integer"}}
    assert read["properties"]["pairs"] == schema["properties"]["pairs"]
    assert read["properties"]["kept"] == {"type": "array", "items": {"type": "boolean"}}
    assert "items" not in schema["properties"]["scores"]  # the caller's schema is left as it was


@pytest.mark.parametrize("space, allowed", [(" ", True), ("  ", False), ("\n\n" + "\t" * 20, True),
                                            ("\n\n\n", False), ("\n" + " " * 21, False)])
def test_json_white_space_is_llama_cpps(qwen_tokenizer, space, allowed):
    """llama.cpp's `space` rule: nothing, one space, or one or two new lines and up to 20 spaces and tabs."""
    matcher = Matcher(Grammar.any_json(), qwen_tokenizer)
    for character in "[" + space:
        (token,) = qwen_tokenizer.encode(character, add_special=False)
        if not np.isfinite(matcher.mask(np.zeros(qwen_tokenizer.n_vocab, np.float32))[token]):
            assert not allowed and character != "["
            return
        matcher.accept(token)
    assert allowed


def test_the_cases_are_those_of_llama_cpps_test_file(llama_cpp_source):
    source = (llama_cpp_source / "tests" / "test-json-schema-to-grammar.cpp").read_text(encoding="utf-8")
    assert GOLDEN["source"].endswith("tests/test-json-schema-to-grammar.cpp")
    checks = source.count('fprintf(stderr, "- ') - 1  # test_all's own line names each test({...}) case
    assert len(CASES) == source.count("test({") + checks and all(name in source for name in CASES)
    assert set(KEPT_DIFFERENCES) | set(READ_AS) | SELDOM_COMPLETE <= set(ACCEPTED)


POINT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def test_listed_properties_are_the_only_ones_unless_the_schema_says(qwen_tokenizer):
    """llama.cpp's reading (common/json-schema.cpp): an object schema with properties and no
    additionalProperties allows no others, at every depth; {"type": "object"} alone allows any object."""
    schema = {"type": "object", "properties": {"p": POINT, "q": {**POINT, "additionalProperties": True},
                                               "properties": {"type": "object"}}, "$defs": {"d": POINT}}
    read = as_llama_cpp_reads(schema)
    assert read["additionalProperties"] is False and read["properties"]["p"]["additionalProperties"] is False
    assert read["properties"]["q"]["additionalProperties"] is True and read["$defs"]["d"] == read["properties"]["p"]
    assert "additionalProperties" not in read["properties"]["properties"] and "additionalProperties" not in schema
    matcher = Matcher(Grammar.from_json_schema(POINT), qwen_tokenizer)
    for token in qwen_tokenizer.encode('{"x": 1', add_special=False):
        matcher.accept(token)
    (comma,) = qwen_tokenizer.encode(",", add_special=False)
    assert not np.isfinite(matcher.mask(np.zeros(qwen_tokenizer.n_vocab, np.float32))[comma])  # no other property
