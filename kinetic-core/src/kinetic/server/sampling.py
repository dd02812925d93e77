"""The sampler fields of a request (llama-server's names and OpenAI's) as SamplingSettings overrides."""

from __future__ import annotations

import math
from typing import Any

from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields

BAN = -100.0  # a logit_bias of -100 bans the token, as OpenAI documents it

# request field -> (SamplingSettings field, kind, lowest, highest)
NUMBERS: dict[str, tuple[str, type, float, float]] = {
    "temperature": ("temp", float, 0.0, 100.0),
    "top_p": ("top_p", float, 0.0, 1.0),
    "top_k": ("top_k", int, -math.inf, math.inf),
    "min_p": ("min_p", float, 0.0, 1.0),
    "repeat_penalty": ("repeat_penalty", float, 0.0, math.inf),
    "repetition_penalty": ("repeat_penalty", float, 0.0, math.inf),
    "repeat_last_n": ("repeat_last_n", int, -1, math.inf),
    "presence_penalty": ("presence_penalty", float, -2.0, 2.0),
    "frequency_penalty": ("frequency_penalty", float, -2.0, 2.0),
    "typical_p": ("typical_p", float, 0.0, 1.0),
    "top_n_sigma": ("top_n_sigma", float, -math.inf, math.inf),
    "xtc_probability": ("xtc_probability", float, 0.0, 1.0),
    "xtc_threshold": ("xtc_threshold", float, 0.0, 1.0),
    "dry_multiplier": ("dry_multiplier", float, 0.0, math.inf),
    "dry_base": ("dry_base", float, 1.0, math.inf),
    "dry_allowed_length": ("dry_allowed_length", int, 0, math.inf),
    "dry_penalty_last_n": ("dry_penalty_last_n", int, -1, math.inf),
    "mirostat": ("mirostat", int, 0, 2),
    "mirostat_tau": ("mirostat_tau", float, 0.0, math.inf),
    "mirostat_eta": ("mirostat_eta", float, 0.0, math.inf),
}


def sampling_overrides(fields: Fields, n_vocab: int) -> dict[str, Any]:
    """The settings the request sets explicitly, by SamplingSettings field."""
    chosen: dict[str, Any] = {}
    for name, (field, kind, low, high) in NUMBERS.items():
        read = fields.integer if kind is int else fields.number
        value = read(name, None, low, high)
        if value is not None:
            chosen[field] = value
    seed = fields.integer("seed", None, -(2**63), 2**64 - 1)
    if seed is not None:
        chosen["seed"] = seed  # negative or 0xFFFFFFFF: a fresh seed, as in llama-server
    if fields.has("dry_sequence_breakers"):
        chosen["dry_sequence_breakers"] = fields.strings("dry_sequence_breakers")
    if fields.has("logit_bias"):
        chosen["logit_bias"] = logit_bias(fields.mapping("logit_bias"), n_vocab)
    return chosen


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
