"""A conversation's prompt token ids, made as llama-server makes them for /v1/chat/completions."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from kinetic.chat.adapt import chat_variables
from kinetic.chat.template import ChatTemplate
from kinetic.tokenizer import Tokenizer


def chat_prompt_tokens(template: ChatTemplate, tokenizer: Tokenizer, messages: Sequence[Mapping[str, Any]],
                       tools: Optional[Sequence[Mapping[str, Any]]] = None, **template_kwargs: Any) -> list[int]:
    """The prompt for messages, ready for an answer (Session.chat_prompt): the template rendered with what
    llama-server gives it, then tokenized with the model's own BOS/EOS and special tokens parsed. Where the
    tokenizer adds a BOS (EOS) and the template writes one itself, the template's is dropped: one BOS, not two.
    tools: the tools offered to the model, OpenAI's entries."""
    text = template.render_variables(chat_variables(template, messages, template_kwargs, tools))
    bos, eos = template.bos_token, template.eos_token
    if tokenizer.add_bos and bos and text.startswith(bos):
        text = text[len(bos):]
    if tokenizer.add_eos and eos and text.endswith(eos):
        text = text[:-len(eos)]
    return tokenizer.encode(text, add_special=True, parse_special=True)
