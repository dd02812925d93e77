"""A tool call as the answer holds it, and as OpenAI's tool_calls report it."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


@dataclass(frozen=True)
class ToolCall:
    """name: the function called; arguments: a JSON object's text, as OpenAI's function.arguments."""

    name: str
    arguments: str
    id: str = field(default_factory=new_call_id)

    @classmethod
    def of(cls, name: str, arguments: Any, id: str = "") -> ToolCall:
        """A call from parsed arguments (a dict), or from their text when the model wrote JSON itself."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        return cls(name, text, id or new_call_id())

    def report(self) -> dict[str, Any]:
        """One entry of message.tool_calls."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}

    def stream_deltas(self, index: int) -> list[dict[str, Any]]:
        """The call as OpenAI streams it: index, id, type and name first, then the arguments."""
        return [{"index": index, "id": self.id, "type": "function", "function": {"name": self.name, "arguments": ""}},
                {"index": index, "function": {"arguments": self.arguments}}]
