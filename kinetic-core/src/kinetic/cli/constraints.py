"""--grammar, --grammar-file, --json-schema and --json-schema-file, as llama.cpp's tools take them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional

from kinetic.cli.usage import UsageError
from kinetic.constraints import Grammar, GrammarError

FLAGS = {"grammar": "--grammar", "grammar_file": "--grammar-file", "json_schema": "--json-schema",
         "json_schema_file": "--json-schema-file"}


def answer_grammar(options: Mapping[str, Any]) -> Optional[Grammar]:
    """The grammar the flags give the answer, or None; one of the four flags at most."""
    given = [name for name in FLAGS if options.get(name) is not None]
    if len(given) > 1:
        raise UsageError(f"give one of {', '.join(FLAGS.values())}, not {' and '.join(FLAGS[n] for n in given)}")
    if not given:
        return None
    name = given[0]
    text = _read(options[name]) if name.endswith("_file") else options[name]
    if name.startswith("grammar"):
        return Grammar.from_gbnf(text)
    try:
        schema = json.loads(text)
    except ValueError as error:
        raise GrammarError(f"{FLAGS[name]}: not valid JSON: {error}") from None
    return Grammar.from_json_schema(schema)


def _read(path: Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise GrammarError(f"{path}: cannot read it: {getattr(error, 'strerror', None) or error}") from None
