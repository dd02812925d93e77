"""JSON Schemas read as llama.cpp's json-schema-to-grammar reads them (common/json-schema.cpp): an object
schema that lists its properties allows no others unless additionalProperties says so, where JSON Schema
itself allows any. llguidance follows JSON Schema, so the schema is closed before it is compiled."""

from __future__ import annotations

from typing import Any

SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
SCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
           "unevaluatedProperties", "unevaluatedItems")


def closed(schema: Any) -> Any:
    """schema with additionalProperties false on every object schema that has properties and does not say."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [closed(item) for item in out[key]]
    for key in SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: closed(item) for name, item in out[key].items()}
    for key in SCHEMAS:
        if key in out:
            out[key] = closed(out[key])
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out
