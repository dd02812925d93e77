"""Calls written as Python, name(key=value, ...), read without running anything: the text is parsed to a
syntax tree and each value read as a literal (ast.literal_eval), never evaluated. LFM2 and Llama 3's
<|python_tag|> calls are written this way."""

from __future__ import annotations

import ast
from typing import Any, Optional

# The JSON spellings LFM2 writes too (llama.cpp's python_style_tool_calls allows them).
JSON_NAMES = {"true": True, "false": False, "null": None}


def read_expression(text: str) -> Optional[ast.expr]:
    """text's one Python expression, or None where it is not one."""
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None


def read_call(node: Optional[ast.expr]) -> Optional[tuple[str, dict[str, Any]]]:
    """(dotted name, keyword arguments) of a call with keyword arguments only, or None."""
    if not isinstance(node, ast.Call) or node.args:
        return None
    name = dotted_name(node.func)
    if name is None or any(keyword.arg is None for keyword in node.keywords):
        return None
    try:
        return name, {keyword.arg: literal(keyword.value) for keyword in node.keywords}
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def dotted_name(node: ast.expr) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = dotted_name(node.value)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


def literal(node: ast.expr) -> Any:
    """A JSON value from a Python literal (strings, numbers, True/False/None, lists, dicts with string keys),
    JSON's true/false/null included; ValueError for anything else."""
    if isinstance(node, ast.Name) and node.id in JSON_NAMES:
        return JSON_NAMES[node.id]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [literal(element) for element in node.elts]
    if isinstance(node, ast.Dict):
        keys = [literal(key) if key is not None else None for key in node.keys]
        if not all(isinstance(key, str) for key in keys):
            raise ValueError("a dict's keys must be strings")
        return dict(zip(keys, (literal(value) for value in node.values)))
    value = ast.literal_eval(node)
    if not isinstance(value, (str, int, float, bool, type(None))):
        raise ValueError(f"{type(value).__name__} is not a JSON value")
    return value
