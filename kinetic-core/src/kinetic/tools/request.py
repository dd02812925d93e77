"""A request's tools, tool_choice and parallel_tool_calls, checked: a bad one is a ToolsError naming its field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from kinetic.constraints import Grammar, GrammarError
from kinetic.constraints.json_schema import as_llama_cpp_reads
from kinetic.errors import KineticError

CHOICES = ("auto", "none", "required")


class ToolsError(KineticError):
    """str() is the one line for the client; field is the request field at fault."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Tool:
    """One function the model may call; parameters is the JSON Schema of its arguments object, read as
    llama.cpp reads it (constraints.json_schema)."""

    name: str
    description: str
    parameters: dict


@dataclass(frozen=True)
class ToolRequest:
    """tools: what the template renders (the client's entries, as sent); functions: those tools read;
    choice: auto, required, or none; forced: the function a named tool_choice calls; parallel: more than one
    call allowed (parallel_tool_calls, false unless set, as in llama-server)."""

    tools: list[dict]
    functions: tuple[Tool, ...]
    choice: str
    forced: Optional[str]
    parallel: bool

    @classmethod
    def read(cls, tools: Any, tool_choice: Any, parallel_tool_calls: Any) -> Optional[ToolRequest]:
        """None when the request has no tools."""
        if tools is None or tools == []:
            return None
        if not isinstance(tools, list):
            raise ToolsError("tools must be a list of {\"type\": \"function\", \"function\": {...}}", "tools")
        functions = tuple(read_tool(tool, i) for i, tool in enumerate(tools))
        names = [tool.name for tool in functions]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ToolsError(f"tools names {twice[0]!r} more than once", "tools")
        choice, forced = read_choice(tool_choice, names)
        if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
            raise ToolsError("parallel_tool_calls must be true or false", "parallel_tool_calls")
        return cls(tools, functions, choice, forced, bool(parallel_tool_calls))

    @property
    def calls(self) -> tuple[Tool, ...]:
        """The functions a call may name."""
        return tuple(tool for tool in self.functions if self.forced in (None, tool.name))


def read_tool(tool: Any, index: int) -> Tool:
    where = f"tools[{index}]"
    if not isinstance(tool, dict) or tool.get("type", "function") != "function" or not isinstance(
            tool.get("function"), dict):
        raise ToolsError(f"{where} must be {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}", "tools")
    function = tool["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ToolsError(f"{where}.function.name must be a non-empty string", "tools")
    parameters = function.get("parameters", {"type": "object", "properties": {}})
    try:
        Grammar.from_json_schema(parameters)
    except GrammarError as error:
        raise ToolsError(f"{where}.function.parameters is not a usable JSON schema: {error}", "tools") from None
    description = function.get("description") or ""
    return Tool(name, description if isinstance(description, str) else json.dumps(description), as_llama_cpp_reads(parameters))


def read_choice(tool_choice: Any, names: list[str]) -> tuple[str, Optional[str]]:
    """("auto" | "none" | "required", the forced function's name or None)."""
    if tool_choice is None:
        return "auto", None
    if isinstance(tool_choice, str):
        if tool_choice not in CHOICES:
            raise ToolsError(f"tool_choice must be one of {', '.join(CHOICES)} or a function, not {tool_choice!r}",
                             "tool_choice")
        return tool_choice, None
    function = tool_choice.get("function") if isinstance(tool_choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str):
        raise ToolsError('tool_choice must name a function as {"type": "function", "function": {"name": ...}}',
                         "tool_choice")
    if name not in names:
        raise ToolsError(f"tool_choice names {name!r}, which is not one of the tools", "tool_choice")
    return "required", name
