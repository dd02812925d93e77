"""The tool-call formats, in the order they are tried on a template's source (llama.cpp's order: the more
particular first); a template that writes none of them gets the generic JSON format."""

from __future__ import annotations

from kinetic.tools.format import ToolFormat
from kinetic.tools.formats.hermes import HERMES

FORMATS: tuple[ToolFormat, ...] = (HERMES,)


def format_for(template_source: str, calls_rendered: bool = True) -> ToolFormat:
    """The format a template writes calls in; calls_rendered: the template renders an assistant's tool_calls
    (Capabilities.tool_calls), else no format of its own applies."""
    if calls_rendered:
        for candidate in FORMATS:
            if candidate.matches(template_source):
                return candidate
    return HERMES  # the generic format replaces this once it lands
