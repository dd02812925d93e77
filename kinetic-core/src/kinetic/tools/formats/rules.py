"""Pieces of Lark (llguidance) the formats' calls_rule share."""

from __future__ import annotations

import json
from typing import Sequence

from kinetic.tools.request import Tool


def quoted(text: str) -> str:
    """A Lark string literal matching text."""
    return json.dumps(text)


def arguments_in_order(tool: Tool) -> list[tuple[str, dict, bool]]:
    """(name, schema, required) of each of tool's parameters, in the order its schema lists them."""
    properties = tool.parameters.get("properties") or {}
    required = set(tool.parameters.get("required") or ())
    return [(name, schema if isinstance(schema, dict) else {}, name in required) for name, schema in properties.items()]


def in_order(items: Sequence[tuple[str, bool]], separator: str = "") -> str:
    """A Lark expression for items (expression, required) written in their order, each one not required
    may be left out, separator between two that are written; "" when there are none."""

    def after(start: int) -> str:  # the rest, once one item is written
        return " ".join(f"{separator} {item}".strip() if required else f"({separator} {item})?"
                        for item, required in items[start:])

    def first(start: int) -> str:  # the rest, none written yet
        if start == len(items):
            return ""
        item, required = items[start]
        written = f"{item} {after(start + 1)}".strip()
        if required:
            return written
        rest = first(start + 1)
        return f"({written} | {rest})" if rest else f"({written})?"

    return first(0)
