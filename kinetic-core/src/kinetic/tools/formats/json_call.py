"""Reading one call written as a JSON object, as Mistral Nemo, Llama 3 and the generic format write them."""

from __future__ import annotations

from typing import Any, Optional

from kinetic.tools.calls import ToolCall


def json_call(entry: Any, arguments_key: str = "arguments") -> Optional[ToolCall]:
    """The call an object {"name": ..., arguments_key: {...}} writes (its "id" kept where it has one), or None
    when entry is no such object."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(
            entry.get(arguments_key, {}), dict):
        return None
    call_id = entry.get("id")
    return ToolCall.of(entry["name"], entry.get(arguments_key, {}), call_id if isinstance(call_id, str) else "")
