"""A JSON Schema read as llama.cpp's json-schema-to-grammar reads it, and the keyword an error is about.
Grammar.from_json_schema calls both: the first before handing the schema to llguidance, the second when
llguidance refuses it, so that the 400 says which keyword, and where."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator, Mapping

# Where a schema holds schemas (JSON Schema 2020-12, Core 10.2 and Validation 6; with the older drafts' names).
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
SCHEMA_VALUES = ("items", "additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
                 "propertyNames", "unevaluatedItems", "unevaluatedProperties")


def as_llama_cpp_reads(schema: Mapping[str, Any]) -> dict:
    """A copy of the schema as llama.cpp takes it (common/json-schema.cpp): `prefixItems` given as one schema,
    not an array, is the schema of every item (build_array; `items` wins where both are given); an object
    schema that lists its properties allows no others unless additionalProperties says so, where JSON Schema
    (and llguidance) would allow any."""
    copy = json.loads(json.dumps(schema))
    for _, node in list(subschemas(copy)):
        if isinstance(node.get("prefixItems"), Mapping):
            node.setdefault("items", node["prefixItems"])
            del node["prefixItems"]
        if "properties" in node:
            node.setdefault("additionalProperties", False)
    return copy


def subschemas(schema: Any, pointer: str = "") -> Iterator[tuple[str, dict]]:
    """Every schema object within a schema, itself first, each with its JSON pointer (RFC 6901)."""
    if not isinstance(schema, dict):
        return
    yield pointer, schema
    for keyword, value in schema.items():
        place = f"{pointer}/{_escaped(keyword)}"
        if keyword in SCHEMA_MAPS and isinstance(value, dict):
            members = [(f"{place}/{_escaped(name)}", member) for name, member in value.items()]
        elif keyword in SCHEMA_LISTS and isinstance(value, list):
            members = [(f"{place}/{i}", member) for i, member in enumerate(value)]
        elif keyword in SCHEMA_VALUES:
            members = [(place, value)]
        else:
            continue
        for member_place, member in members:
            yield from subschemas(member, member_place)


def keyword_at_fault(schema: Mapping[str, Any], error: str) -> str:
    """' (keyword K at /pointer)' for the keyword llguidance's error is about: the one whose value (a pattern, a
    type, a format, a $ref) the error quotes, else the one it names (its place only where one keyword of that
    name is in the schema); '' where the error points at no keyword."""
    keywords = list(_keywords(schema))
    quoted = sorted((k for k in keywords if _quotes(error, k[2])), key=lambda k: -len(k[2]))
    if quoted:
        place, keyword, _ = quoted[0]
        return f" (keyword {keyword} at {place})"
    named = [(place, keyword) for place, keyword, _ in keywords if _names(error, keyword)]
    if not named:
        return ""
    place, keyword = named[0]
    if sum(other == keyword for _, other in named) > 1:
        return f" (keyword {keyword})"
    return f" (keyword {keyword} at {place})"


def _keywords(schema: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """(pointer, keyword, value) for each keyword of each schema within, a pattern property's pattern as the
    value of patternProperties."""
    for pointer, node in subschemas(dict(schema)):
        for keyword, value in node.items():
            yield f"{pointer}/{_escaped(keyword)}", keyword, value
            if keyword == "patternProperties" and isinstance(value, dict):
                yield from ((f"{pointer}/{keyword}/{_escaped(pattern)}", keyword, pattern) for pattern in value)


def _quotes(error: str, value: Any) -> bool:
    """llguidance quotes a value after a colon or between quotes; a $ref's pointer without its '#'."""
    if not isinstance(value, str) or not value.strip():
        return False
    forms = {value, value.removeprefix("#")} - {""}
    return any(quoted in error for form in forms for quoted in (f": {form}", f"'{form}'", f'"{form}"'))


def _names(error: str, keyword: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(keyword)}(?!\w)", error) is not None


def _escaped(name: str) -> str:
    return str(name).replace("~", "~0").replace("/", "~1")
