"""A grammar as the user gives it (llama.cpp's GBNF, a JSON Schema, or any JSON value), checked and turned
into llguidance's grammar definition once per request."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import llguidance

from kinetic.constraints.gbnf import gbnf_as_lark
from kinetic.constraints.json_schema import as_llama_cpp_reads, keyword_at_fault
from kinetic.errors import KineticError

# JSON white space as llama.cpp's json-schema-to-grammar allows it (its `space` rule: nothing, one space, or one
# or two new lines and up to 20 spaces and tabs), so that a model cannot fill its answer with white space.
JSON_OPTIONS = {"whitespace_pattern": "(?: |\n{1,2}[ \t]{0,20})?"}


def lark_json(schema: Any) -> str:
    """A term of llguidance's Lark for JSON that validates against schema, read and spaced as
    Grammar.from_json_schema reads it (the tool-call grammars embed their calls' schemas so)."""
    return "%json " + json.dumps({**as_llama_cpp_reads(schema), "x-guidance": JSON_OPTIONS})


class GrammarError(KineticError):
    """A grammar or schema that cannot constrain decoding; str() names the error and where it is."""


@dataclass(frozen=True)
class Grammar:
    """definition: llguidance's grammar text; kind: what the user gave ("grammar", "JSON schema", "JSON")."""

    definition: str
    kind: str

    @classmethod
    def from_gbnf(cls, text: str) -> Grammar:
        """llama.cpp's GBNF (its grammars/ folder, --grammar, the server's grammar field)."""
        try:
            lark = gbnf_as_lark(text)
        except Exception as error:  # the converter raises GbnfToLarkError or a plain Exception
            raise GrammarError(f"the grammar is not valid GBNF: {_one_line(error)}") from None
        return cls._checked(llguidance.LLMatcher.grammar_from_lark(lark), "grammar")

    @classmethod
    def from_lark(cls, text: str, kind: str) -> Grammar:
        """llguidance's own Lark dialect, as Kinetic composes it (tool calls)."""
        try:
            definition = llguidance.LLMatcher.grammar_from_lark(text)
        except Exception as error:
            raise GrammarError(f"the {kind} is not valid: {_one_line(error)}") from None
        return cls._checked(definition, kind)

    @classmethod
    def from_json_schema(cls, schema: Any) -> Grammar:
        """Output that validates against a JSON Schema (response_format json_schema, --json-schema)."""
        if not isinstance(schema, Mapping):
            raise GrammarError(f"the JSON schema must be an object, not {json.dumps(schema)[:40]}")
        schema = as_llama_cpp_reads(schema)
        definition = llguidance.LLMatcher.grammar_from_json_schema(json.dumps(schema), defaults=JSON_OPTIONS)
        return cls._checked(definition, "JSON schema", lambda error: keyword_at_fault(schema, error))

    @classmethod
    def any_json(cls) -> Grammar:
        """Any JSON value, as llama.cpp's response_format json_object gives."""
        return cls._checked(llguidance.LLMatcher.grammar_from_json_schema("{}", defaults=JSON_OPTIONS), "JSON")

    @classmethod
    def _checked(cls, definition: str, kind: str, where: Callable[[str], str] = lambda error: "") -> Grammar:
        """where(error) adds the place of the error in what the user gave."""
        error = _one_line(llguidance.LLMatcher.validate_grammar(definition))
        if error:
            raise GrammarError(f"the {kind} cannot be used: {error}{where(error)}")
        return cls(definition, kind)


def _one_line(error: Any) -> str:
    return " ".join(str(error).split())
