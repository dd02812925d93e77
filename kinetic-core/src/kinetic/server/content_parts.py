"""A message's content given as a list of parts, as the OpenAI routes take it: the text parts joined, a
picture or a file refused while the model reads only text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kinetic.server.errors import bad_request
from kinetic.server.fields import json_type


@dataclass(frozen=True)
class PartKinds:
    """How one API writes a content list."""

    field: str  # the request field errors name
    text: Optional[tuple[str, ...]]  # part types holding text ("text", or "refusal" for a refusal); None: any type
    media: tuple[str, ...]  # part types only a vision model reads
    example: str  # a text part as the API writes one


CHAT = PartKinds("messages", ("text",), ("image_url", "input_audio", "file"), '{"type": "text", "text": "..."}')
RESPONSES = PartKinds("input", None, ("input_image", "input_file", "input_audio"),
                      '{"type": "input_text", "text": "..."}')


def joined_text(content: Any, where: str, kinds: PartKinds) -> str:
    """content, a string or a list of text parts, as one string; where names it in errors (messages[2].content)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(f"{where} must be a string or a list of parts, not {json_type(content)}", kinds.field)
    texts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in kinds.media:
            raise bad_request(f"{where}: this model reads only text; {kind} parts need a vision model", kinds.field)
        text = part.get("text", part.get("refusal")) if isinstance(kind, str) else None
        if (kinds.text is not None and kind not in kinds.text) or not isinstance(text, str):
            raise bad_request(f"{where} parts must be {kinds.example}", kinds.field)
        texts.append(text)
    return "".join(texts)
