"""JSON Schemas read as llama.cpp reads them: listed properties are the only ones, unless the schema says."""

from __future__ import annotations

import json

import llguidance

from kinetic.constraints import Grammar
from kinetic.constraints.schemas import closed

POINT = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def test_object_schemas_with_properties_are_closed_at_every_depth_unless_they_say():
    schema = {"type": "object", "properties": {"p": POINT, "q": {**POINT, "additionalProperties": True},
                                               "properties": {"type": "object"}},
              "$defs": {"d": POINT}, "anyOf": [POINT], "items": POINT}
    out = closed(schema)
    assert out["additionalProperties"] is False
    assert out["properties"]["p"]["additionalProperties"] is False
    assert out["properties"]["q"]["additionalProperties"] is True
    assert "additionalProperties" not in out["properties"]["properties"]  # {"type": "object"} alone: any object
    assert [out["$defs"]["d"], out["anyOf"][0], out["items"]] == [closed(POINT)] * 3
    assert "additionalProperties" not in schema  # the caller's schema is left as it was


def test_the_grammar_refuses_properties_the_schema_does_not_list():
    definition = Grammar.from_json_schema(POINT).definition
    check = llguidance.LLMatcher.validate_grammar(definition)
    assert not check
    matcher = llguidance.LLMatcher(llguidance.LLTokenizer(llguidance.TokenizerWrapper(Bytes())), definition)
    assert matcher.consume_tokens(list(json.dumps({"x": 1}).encode())) and matcher.is_accepting()
    matcher.reset()
    assert not matcher.consume_tokens(list(b'{"x": 1, "y"'))


class Bytes:
    """A vocabulary of the 256 bytes and an end token."""

    tokens = [bytes([b]) for b in range(256)] + [b"<eos>"]
    special_token_ids = [256]
    eos_token_id, bos_token_id = 256, None

    def __call__(self, text: bytes) -> list[int]:
        return list(text)
