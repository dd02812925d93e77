"""The sampler fields of a request (llama-server's names and OpenAI's) as SamplingSettings overrides."""

from __future__ import annotations

import math
from typing import Any

from kinetic.sampling.names import SETTINGS, Setting
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields

BAN = -100.0  # a logit_bias of -100 bans the token, as OpenAI documents it


def sampling_overrides(fields: Fields, n_vocab: int) -> dict[str, Any]:
    """The settings the request sets explicitly, by SamplingSettings field."""
    chosen: dict[str, Any] = {}
    for setting in SETTINGS:
        for name in setting.request:
            value = _read(fields, setting, name)
            if value is not None:
                chosen[setting.field] = value  # a seed of -1 or 0xFFFFFFFF: a fresh one, as in llama-server
    if fields.has("logit_bias"):
        chosen["logit_bias"] = logit_bias(fields.mapping("logit_bias"), n_vocab)
    return chosen


def _read(fields: Fields, setting: Setting, name: str) -> Any:
    if setting.kind is list:
        return fields.strings(name) if fields.has(name) else None
    read = fields.integer if setting.kind is int else fields.number
    return read(name, None, setting.low, setting.high)


def logit_bias(given: dict[str, Any], n_vocab: int) -> dict[int, float]:
    """{"token id": bias from -100 to 100}; -100 bans the token."""
    biases = {}
    for key, value in given.items():
        try:
            token = int(key)
        except ValueError:
            raise bad_request(f"logit_bias keys must be token ids, not {key!r}", "logit_bias") from None
        if not 0 <= token < n_vocab:
            raise bad_request(f"logit_bias names token {token}, outside the vocabulary of {n_vocab}", "logit_bias")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -100 <= value <= 100:
            raise bad_request(f"logit_bias values must be numbers from -100 to 100, not {value!r}", "logit_bias")
        biases[token] = -math.inf if value <= BAN else float(value)
    return biases
