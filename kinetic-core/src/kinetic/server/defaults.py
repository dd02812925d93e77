"""The server-wide generation defaults `kinetic serve` takes as llama-server does (--temp, --top-k, -n, ...):
what a request that does not set a field gets, and how /props reports them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from kinetic.sampling.names import SETTINGS
from kinetic.sampling.settings import SamplingSettings

# The order Kinetic's samplers run in, llama.cpp's default order, under llama-server's names for them.
SAMPLERS = ("penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature")


@dataclass(frozen=True)
class ServerDefaults:
    """sampling: SamplingSettings fields serve's flags set (over the model file's recommendations);
    n_predict: most tokens per answer when a request gives no limit, -1 for none."""

    sampling: Mapping[str, Any] = field(default_factory=dict)
    n_predict: int = -1
    sign_key: Optional[bytes] = None  # --sign-key's Ed25519 secret key: receipts are signed with it

    def max_tokens(self, requested: int) -> int:
        """A request's limit, or the server's when it gives none (-1 or 0), as llama-server does."""
        return requested if requested > 0 else self.n_predict


def props_params(settings: SamplingSettings, n_predict: int) -> dict[str, Any]:
    """default_generation_settings.params of /props: each sampler setting under llama-server's name for it (the
    request field), the limit, and the samplers llama.cpp has that Kinetic leaves off (dynamic temperature,
    adaptive-p) with their off values."""
    params: dict[str, Any] = {setting.request[0]: getattr(settings, setting.field) for setting in SETTINGS}
    params["dry_sequence_breakers"] = list(settings.dry_sequence_breakers)
    return {**params, "dynatemp_range": 0.0, "dynatemp_exponent": 1.0, "adaptive_target": -1.0,
            "adaptive_decay": 0.9, "max_tokens": n_predict, "n_predict": n_predict, "n_keep": 0, "n_discard": 0,
            "ignore_eos": False, "stream": False, "n_probs": 0, "min_keep": 0, "samplers": list(SAMPLERS)}
