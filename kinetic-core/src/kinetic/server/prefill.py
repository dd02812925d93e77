"""POST /v1/prefill (Zero Wait for apps): the conversation of a chat completion to come, sent while its last
message is still being written; its prompt runs up to just before the last word of that message."""

from __future__ import annotations

from kinetic.server.fields import Fields, read_json
from kinetic.server.jobs import chat_messages
from kinetic.server.served import ServedModel
from kinetic.server.tool_calls import offered_tools


class Prefill:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        messages = chat_messages(fields)
        offered = offered_tools(fields)
        prompt, upto = self.served.session.draft_prompt(messages, offered.tools if offered else None,
                                                        **fields.mapping("chat_template_kwargs"))
        resp.media = {"object": "prefill", "cached_tokens": self.served.prefill(prompt, upto)}
