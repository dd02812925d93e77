"""The sampler fields of a request (llama-server's names and OpenAI's) as SamplingSettings overrides."""

from __future__ import annotations

import math
from typing import Any

from kinetic.sampling.names import SETTINGS, Setting
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields
from kinetic.tokenizer import Tokenizer

BAN = -100.0  # a logit_bias of -100 bans the token, as OpenAI documents it


def sampling_overrides(fields: Fields, tokenizer: Tokenizer) -> dict[str, Any]:
    """The settings the request sets explicitly, by SamplingSettings field."""
    chosen: dict[str, Any] = {}
    for setting in SETTINGS:
        for name in setting.request:
            value = _read(fields, setting, name)
            if value is not None:
                chosen[setting.field] = value  # a seed of -1 or 0xFFFFFFFF: a fresh one, as in llama-server
    if fields.has("logit_bias"):
        chosen["logit_bias"] = logit_bias(fields.body["logit_bias"], tokenizer)
    return chosen


def _read(fields: Fields, setting: Setting, name: str) -> Any:
    if setting.kind is list:
        return fields.strings(name) if fields.has(name) else None
    read = fields.integer if setting.kind is int else fields.number
    return read(name, None, setting.low, setting.high)


def logit_bias(given: Any, tokenizer: Tokenizer) -> dict[int, float]:
    """OpenAI's {"token id": bias}, and llama-server's other forms: [[token id or text, bias], ...] and text keys
    (every token of the text takes the bias). A bias is a number from -100 to 100 (-100 bans the token) or
    false (bans it)."""
    pairs = given.items() if isinstance(given, dict) else given if isinstance(given, list) else None
    if pairs is None:
        raise bad_request("logit_bias must be an object of token ids to biases, or a list of [token, bias] pairs",
                          "logit_bias")
    biases = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise bad_request(f"logit_bias pairs must be [token, bias], not {pair!r}", "logit_bias")
        bias = _bias(pair[1])
        for token in _tokens(pair[0], tokenizer):
            biases[token] = bias
    return biases


def _tokens(key: Any, tokenizer: Tokenizer) -> list[int]:
    """A token id (a number, or a key of digits), or the tokens of a text."""
    if isinstance(key, str) and not key.isdigit():
        return tokenizer.encode(key, add_special=False)
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise bad_request(f"logit_bias names tokens by id or by text, not {key!r}", "logit_bias")
    token = int(key)
    if not 0 <= token < tokenizer.n_vocab:
        raise bad_request(f"logit_bias names token {token}, outside the vocabulary of {tokenizer.n_vocab}",
                          "logit_bias")
    return [token]


def _bias(value: Any) -> float:
    if value is False:
        return -math.inf
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not -100 <= value <= 100:
        raise bad_request(f"logit_bias values must be numbers from -100 to 100 or false, not {value!r}",
                          "logit_bias")
    return -math.inf if value <= BAN else float(value)
