"""llama-cpp-python's LlamaGrammar: what a completion or chat follows, a GBNF grammar (llama.cpp's dialect) or a
JSON Schema, handed to the server's grammar or json_schema field, which llguidance reads (docs/grammars.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional, Union


class LlamaGrammar:
    def __init__(self, gbnf: Optional[str] = None, json_schema: Optional[dict] = None):
        self._fields = {"grammar": gbnf} if json_schema is None else {"json_schema": json_schema}

    @classmethod
    def from_string(cls, grammar: str, verbose: bool = True) -> LlamaGrammar:
        return cls(gbnf=grammar)

    @classmethod
    def from_file(cls, file: Union[str, Path], verbose: bool = True) -> LlamaGrammar:
        return cls(gbnf=Path(file).read_text())

    @classmethod
    def from_json_schema(cls, json_schema: str, verbose: bool = True) -> LlamaGrammar:
        """JSON that validates against json_schema (a JSON text)."""
        return cls(json_schema=json.loads(json_schema))

    def fields(self) -> dict[str, Any]:
        """The request field that carries it: grammar or json_schema."""
        return dict(self._fields)
