"""A request's constraint on its answer: response_format (OpenAI's json_object and json_schema), or
llama-server's own json_schema and grammar fields, as a Grammar; a 400 naming the field for a bad one."""

from __future__ import annotations

from typing import Any, Optional

from kinetic.constraints import Grammar, GrammarError
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields

FORMATS = ("text", "json_object", "json_schema")
ANY_JSON: dict = {}  # the schema of any JSON value


def request_grammar(fields: Fields) -> Optional[Grammar]:
    """The grammar the answer must follow, or None for free text."""
    constrains_format = fields.mapping("response_format").get("type", "text") != "text"
    given = [name for name in ("response_format", "json_schema", "grammar")
             if fields.has(name) and (name != "response_format" or constrains_format)]
    if len(given) > 1:
        raise bad_request(f"give one of response_format, json_schema and grammar, not {' and '.join(given)}",
                          given[1])
    try:
        if fields.has("grammar"):
            return Grammar.from_gbnf(fields.string("grammar"))
        schema = requested_schema(fields)
        if schema is None:
            return None
        return Grammar.any_json() if schema == ANY_JSON else Grammar.from_json_schema(schema)
    except GrammarError as error:
        raise bad_request(str(error), given[0]) from None


def requested_schema(fields: Fields) -> Optional[Any]:
    """The JSON Schema the answer must validate against (ANY_JSON for any JSON value), from llama-server's
    json_schema or response_format: {"type": "json_object"} (any JSON value, or one that validates against its
    "schema", as llama-server takes it) or {"type": "json_schema", "json_schema": {"schema": ...}}; None for
    free text."""
    if fields.has("json_schema"):
        return fields.body["json_schema"]
    response_format = fields.mapping("response_format")
    kind = response_format.get("type", "text")
    if kind not in FORMATS:
        raise bad_request(f"unknown response_format type {kind!r}; use {', '.join(FORMATS)}", "response_format")
    if kind == "json_object":
        return response_format.get("schema", ANY_JSON)
    if kind == "json_schema":
        described = response_format.get("json_schema")
        if not isinstance(described, dict) or "schema" not in described:
            raise bad_request('response_format json_schema needs {"json_schema": {"name": ..., "schema": {...}}}',
                              "response_format")
        return described["schema"]
    return None
