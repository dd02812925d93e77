"""Prompts as llama-server reads them: a string, token ids, or a mixed list of strings and token ids.

llama-server's tokenize_mixed (tools/server/server-common.cpp): the strings are tokenized and the ids
kept as they are, in order; BOS (add_special) goes only before a first element that is a string. The
completion routes (jobs.prompt_tokens) and /infill's parts (infill.py) read their prompts through here.
"""

from __future__ import annotations

from typing import Any

from kinetic.server.errors import bad_request
from kinetic.server.fields import json_type

# the object form llama-server takes for a prompt with media; Kinetic reads its text part
PROMPT_STRING = "prompt_string"


def is_token_id(value: Any, n_vocab: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n_vocab


def mixed_tokens(tokenizer, value: Any, field: str, add_special: bool, parse_special: bool) -> list[int]:
    """value (a string, or a list of strings and token ids) as token ids; anything else is a 400 naming field."""
    if isinstance(value, str):
        return tokenizer.encode(value, add_special=add_special, parse_special=parse_special)
    if not isinstance(value, list):
        raise bad_request(f"{field} must be a string, token ids, or a list of strings and token ids, "
                          f"not {json_type(value)}", field)
    tokens: list[int] = []
    for i, part in enumerate(value):
        if isinstance(part, str):
            tokens += tokenizer.encode(part, add_special=add_special and i == 0, parse_special=parse_special)
        elif is_token_id(part, tokenizer.n_vocab):
            tokens.append(part)
        else:
            raise bad_request(f"{field}[{i}] must be a string or a token id from 0 to {tokenizer.n_vocab - 1}, "
                              f"not {part!r}", field)
    return tokens


def completion_tokens(tokenizer, prompt: Any) -> list[int]:
    """A completion's prompt: a string, token ids, a mixed list, {"prompt_string": ...}, or a list holding one
    of these. A list without token ids is a list of prompts, as in llama-server's tokenize_input_prompts;
    more than one is refused: one answer per request."""
    if isinstance(prompt, dict) and PROMPT_STRING in prompt:
        prompt = prompt[PROMPT_STRING]
    if isinstance(prompt, list) and prompt and not any(isinstance(part, int) for part in prompt):
        if len(prompt) > 1:
            raise bad_request(f"prompt holds {len(prompt)} prompts; send one prompt per request", "prompt")
        return completion_tokens(tokenizer, prompt[0])
    return mixed_tokens(tokenizer, prompt, "prompt", add_special=True, parse_special=True)
