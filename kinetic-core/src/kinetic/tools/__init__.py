"""Tool calls: the request's tools, the formats chat templates write calls in, the grammar that holds a reply
to calls, and the reading of calls out of the answer's text (docs/tools.md)."""

from kinetic.tools.calls import ToolCall
from kinetic.tools.format import Markup, ToolFormat
from kinetic.tools.formats import format_for
from kinetic.tools.request import Tool, ToolRequest, ToolsError

__all__ = ["Markup", "Tool", "ToolCall", "ToolFormat", "ToolRequest", "ToolsError", "format_for"]
