"""POST /v1/prefill (Zero Wait for apps): the conversation of a chat completion to come, sent while its last
message is still being written; its prompt runs up to just before the last word of that message, which may
still grow (the words before it tokenize as they will)."""

from __future__ import annotations

import re
from typing import Any

from kinetic.contracts.prompt_states import common_prefix
from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_messages
from kinetic.server.served import ServedModel
from kinetic.server.tool_calls import read_tools

LAST_WORD = re.compile(r"\S*\s*$")


class Prefill:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        messages = chat_messages(fields)
        tools = read_tools(fields)
        offered = tools.tools if tools is not None and tools.choice != "none" else None
        kwargs = fields.mapping("chat_template_kwargs")
        prompt = self.served.session.chat_prompt(messages, offered, **kwargs)
        written = self.served.session.chat_prompt([*messages[:-1], without_last_word(messages[-1])], offered, **kwargs)
        cached = self.served.prefill(prompt, common_prefix(prompt, written, limit=len(prompt)))
        resp.media = {"object": "prefill", "cached_tokens": cached}


def without_last_word(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    return {**message, "content": LAST_WORD.sub("", content)} if isinstance(content, str) else message
