"""What llama-server gives a chat template: the messages adapted to what the template can take, and the
variables it sets, so that Kinetic's chat prompts are llama-server's for the same conversation."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kinetic.chat.capabilities import Capabilities
from kinetic.chat.dialects import dialect_of
from kinetic.chat.inputs import REASONING_FIELDS, plain, prepare_messages
from kinetic.chat.sandbox import strftime_now
from kinetic.chat.template import ChatTemplate
from kinetic.chat.tool_messages import with_tool_use
from kinetic.errors import ChatTemplateError

HARMONY_CHANNEL = "<|channel|>"  # gpt-oss templates, which know a developer role of their own


def chat_variables(template: ChatTemplate, messages: Sequence[Mapping[str, Any]],
                   kwargs: Mapping[str, Any], tools: Optional[Sequence[Mapping[str, Any]]] = None) -> dict[str, Any]:
    """The variables of a chat prompt: the tools offered (undefined, not null, without), enable_thinking on
    where the template reasons, earlier turns' reasoning kept (preserve_reasoning, as llama-server's
    default), today's date as two of llama.cpp's templates' variables; kwargs (chat_template_kwargs) win."""
    try:
        return {
            "messages": adapted_messages(template, messages, plain(tools)),
            **({"tools": plain(tools)} if tools else {}),
            "bos_token": template.bos_token,
            "eos_token": template.eos_token,
            "enable_thinking": template.capabilities.thinking,
            "datetime": strftime_now("%b %d %Y"),
            "date_string": strftime_now("%d %b %Y"),
            **kept_reasoning(kwargs.get("preserve_reasoning", True)),
            **plain(kwargs),
            "add_generation_prompt": True,
        }
    except RecursionError:
        raise ChatTemplateError("the messages or variables are nested too deeply for a chat template") from None


def kept_reasoning(preserve: Any) -> dict[str, Any]:
    """preserve_reasoning under the names templates read it by."""
    if not isinstance(preserve, bool):
        return {}
    return {"preserve_reasoning": preserve, "preserve_thinking": preserve, "clear_thinking": not preserve,
            "truncate_history_thinking": not preserve, "drop_thinking": not preserve}


def adapted_messages(template: ChatTemplate, messages: Sequence[Mapping[str, Any]],
                     tools: Optional[list[dict[str, Any]]] = None) -> list[dict[str, Any]]:
    """Every message with a content; tool calls, results and tools as the template takes them (tool_messages);
    content as the template takes it; a developer message as a system one (but for gpt-oss); a system message
    the template ignores or refuses folded into the next message; earlier turns' reasoning as
    reasoning_content, or as the template's family takes it (dialects)."""
    capabilities = template.capabilities
    adapted = [with_content(with_reasoning(message), capabilities)
               for message in with_tool_use(prepare_messages(messages), capabilities, tools)]
    if HARMONY_CHANNEL not in template.source:
        adapted = [{**m, "role": "system"} if m.get("role") == "developer" else m for m in adapted]
    if not capabilities.system_role and adapted and adapted[0].get("role") == "system":
        system, adapted = adapted[0], adapted[1:]
        if adapted:
            adapted[0] = {**adapted[0], "content": f"{text_of(system['content'])}\n{text_of(adapted[0]['content'])}"}
    dialect = dialect_of(template.source)
    return adapted if dialect is None else [dialect(message) for message in adapted]


def with_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    """message with its reasoning under reasoning_content alone, and none when it is empty."""
    kept = {key: value for key, value in message.items() if key not in REASONING_FIELDS}
    reasoning = message.get(REASONING_FIELDS[0])
    return {**kept, REASONING_FIELDS[0]: reasoning} if reasoning else kept


def with_content(message: dict[str, Any], capabilities: Capabilities) -> dict[str, Any]:
    """message with "" for a missing content, text parts joined where the template takes only strings,
    and a string made one text part where it takes only parts."""
    content = message.get("content", "")
    if isinstance(content, list) and capabilities.string_content and not capabilities.typed_content:
        content = text_of(content)
    elif isinstance(content, str) and capabilities.typed_content and not capabilities.string_content:
        content = [{"type": "text", "text": content}]
    return {**message, "content": content}


def text_of(content: Any) -> str:
    """A content's text: a string as it is, the text parts of a list joined by new lines."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    texts = (part.get("text", "") for part in parts if isinstance(part, dict) and part.get("type") == "text")
    return "\n".join(str(text) for text in texts)
