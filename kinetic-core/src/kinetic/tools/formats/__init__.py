"""The tool-call formats, in the order they are tried on a template's source: llama.cpp's (common/chat.cpp,
common_chat_try_specialized_template: Ministral 3, gpt-oss, LFM2, Qwen3-Coder's XML before Hermes' <tool_call> JSON,
then those its autoparser finds); a template that writes none of them gets the generic JSON format."""

from __future__ import annotations

from kinetic.tools.format import ToolFormat
from kinetic.tools.formats.deepseek import DEEPSEEK_R1, DEEPSEEK_V3_1
from kinetic.tools.formats.generic import GENERIC
from kinetic.tools.formats.harmony import HARMONY
from kinetic.tools.formats.hermes import HERMES
from kinetic.tools.formats.lfm2 import LFM2
from kinetic.tools.formats.llama3 import LLAMA_3
from kinetic.tools.formats.mistral import MINISTRAL_3, MISTRAL_NEMO, MISTRAL_SMALL_3_2
from kinetic.tools.formats.qwen_xml import QWEN_XML

FORMATS: tuple[ToolFormat, ...] = (MINISTRAL_3, HARMONY, LFM2, QWEN_XML, MISTRAL_SMALL_3_2, MISTRAL_NEMO, DEEPSEEK_R1,
                                   DEEPSEEK_V3_1, LLAMA_3, HERMES)


def format_for(template_source: str, knows_tool_use: bool = True) -> ToolFormat:
    """The format a template writes calls in; knows_tool_use: the template renders tools or calls
    (Capabilities), else the generic format applies, which kinetic.chat.tool_messages describes to the model."""
    if knows_tool_use:
        for candidate in FORMATS:
            if candidate.matches(template_source):
                return candidate
    return GENERIC
