"""Sampling settings with llama.cpp's names and defaults, and the defaults a GGUF file recommends."""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any, Mapping

from kinetic.sampling.names import SETTINGS

# llama.cpp's LLAMA_DEFAULT_SEED: "pick a fresh seed", as -1 is on its command line and server
RANDOM_SEED = 0xFFFFFFFF


@dataclasses.dataclass(frozen=True)
class SamplingSettings:
    """Every sampler setting, named as llama-server's request fields; defaults are llama.cpp's common.h."""

    temp: float = 0.8  # <= 0: greedy, the likeliest token, ties to the lowest id
    top_k: int = 40  # <= 0: all tokens
    top_p: float = 0.95  # 1: off
    min_p: float = 0.05  # 0: off
    typical_p: float = 1.0  # 1: off
    repeat_penalty: float = 1.0  # 1: off
    repeat_last_n: int = 64  # 0: off, -1: the whole history
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    dry_multiplier: float = 0.0  # 0: off
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = -1  # 0: off, -1: the whole history (Kinetic's documented default)
    dry_sequence_breakers: tuple[str, ...] = ("\n", ":", '"', "*")
    top_n_sigma: float = -1.0  # <= 0: off
    xtc_probability: float = 0.0  # 0: off
    xtc_threshold: float = 0.1  # > 0.5: off
    mirostat: int = 0  # 0: off, 1 or 2: Mirostat in place of the penalties and filters
    mirostat_tau: float = 5.0
    mirostat_eta: float = 0.1
    seed: int = RANDOM_SEED  # RANDOM_SEED or negative: a fresh one per answer, see with_fresh_seed
    logit_bias: Mapping[int, float] = dataclasses.field(default_factory=dict)  # token id -> added to its logit

    def __post_init__(self) -> None:
        if self.mirostat not in (0, 1, 2):
            raise ValueError(f"mirostat must be 0, 1 or 2, not {self.mirostat}")
        object.__setattr__(self, "dry_sequence_breakers", tuple(self.dry_sequence_breakers))

    @property
    def is_greedy(self) -> bool:
        return self.temp <= 0.0

    @property
    def has_seed(self) -> bool:
        return self.seed >= 0 and self.seed != RANDOM_SEED


# general.sampling.<key> -> (field, type)
METADATA_KEYS: dict[str, tuple[str, type]] = {s.gguf: (s.field, s.kind) for s in SETTINGS if s.gguf}


def metadata_defaults(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a model file recommends through general.sampling.*, by field name."""
    found = {}
    for key, (name, kind) in METADATA_KEYS.items():
        value = _number(metadata.get(f"general.sampling.{key}"))
        if value is not None:
            found[name] = int(value) if kind is int else float(value)  # int() truncates, as strtol does
    return found


def _number(value: Any) -> float | None:
    """A metadata value read as llama.cpp reads it (its text through strtof), or None when it is no number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def resolve_settings(metadata: Mapping[str, Any], user: Mapping[str, Any] | None = None) -> SamplingSettings:
    """llama.cpp's defaults, then the model file's general.sampling.*, then what the user set explicitly."""
    return SamplingSettings(**{**metadata_defaults(metadata), **(user or {})})


def with_fresh_seed(settings: SamplingSettings) -> SamplingSettings:
    """The settings with a concrete seed: theirs, or a fresh 31-bit one (to be recorded, e.g. in a receipt)."""
    if settings.has_seed:
        return settings
    return dataclasses.replace(settings, seed=secrets.randbits(31))
