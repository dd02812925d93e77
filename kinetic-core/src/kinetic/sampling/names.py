"""Each sampler setting under its three outside names, side by side: the command-line flags (llama.cpp's
spellings), the request fields (llama-server's and OpenAI's) and the GGUF key a model file recommends it
with (general.sampling.<key>, as llama.cpp's common_params_sampling reads them)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    field: str  # SamplingSettings' field
    kind: type  # int, float, or list (of strings)
    flags: tuple[str, ...]  # on kinetic run, chat and serve
    request: tuple[str, ...]  # in a request body
    help: str = ""
    low: float = -math.inf  # the range a request may give
    high: float = math.inf
    gguf: str = ""


SETTINGS = (
    Setting("temp", float, ("--temp",), ("temperature",), "temperature; 0 always picks the likeliest token "
            "[default: the model's]", 0.0, 100.0, gguf="temp"),
    Setting("top_k", int, ("--top-k",), ("top_k",), "sample from the N likeliest tokens; 0 for all", gguf="top_k"),
    Setting("top_p", float, ("--top-p",), ("top_p",), "sample from the likeliest tokens that add up to P",
            0.0, 1.0, gguf="top_p"),
    Setting("min_p", float, ("--min-p",), ("min_p",), "skip tokens less than P times as likely as the best",
            0.0, 1.0, gguf="min_p"),
    Setting("repeat_penalty", float, ("--repeat-penalty",), ("repeat_penalty", "repetition_penalty"),
            "penalty for repeating recent tokens; 1 for none", 0.0, gguf="penalty_repeat"),
    Setting("repeat_last_n", int, ("--repeat-last-n",), ("repeat_last_n",),
            "recent tokens the penalties look at; 0 for none, -1 for all", -1, gguf="penalty_last_n"),
    Setting("seed", int, ("-s", "--seed"), ("seed",), "seed for repeatable sampling", -(2**63), 2**64 - 1),
    Setting("presence_penalty", float, ("--presence-penalty",), ("presence_penalty",),
            "subtracted once from the logits of recent tokens", -2.0, 2.0),
    Setting("frequency_penalty", float, ("--frequency-penalty",), ("frequency_penalty",),
            "subtracted per time seen", -2.0, 2.0),
    Setting("typical_p", float, ("--typical",), ("typical_p",), "locally typical sampling; 1 for none", 0.0, 1.0),
    Setting("top_n_sigma", float, ("--top-nsigma",), ("top_n_sigma",),
            "keep tokens within N standard deviations of the best logit; -1 for none"),
    Setting("xtc_probability", float, ("--xtc-probability",), ("xtc_probability",),
            "XTC: the chance of dropping the likeliest tokens", 0.0, 1.0, gguf="xtc_probability"),
    Setting("xtc_threshold", float, ("--xtc-threshold",), ("xtc_threshold",),
            "XTC: how likely a token must be to be dropped", 0.0, 1.0, gguf="xtc_threshold"),
    Setting("dry_multiplier", float, ("--dry-multiplier",), ("dry_multiplier",), "DRY repetition penalty; 0 for none",
            0.0),
    Setting("dry_base", float, ("--dry-base",), ("dry_base",), "DRY base", 1.0),
    Setting("dry_allowed_length", int, ("--dry-allowed-length",), ("dry_allowed_length",),
            "DRY: repeats this long are free", 0),
    Setting("dry_penalty_last_n", int, ("--dry-penalty-last-n",), ("dry_penalty_last_n",),
            "DRY: tokens looked back at; -1 for all", -1),
    Setting("dry_sequence_breakers", list, ("--dry-sequence-breaker",), ("dry_sequence_breakers",),
            "text that ends a repetition for DRY, repeatable; none for none"),
    Setting("mirostat", int, ("--mirostat",), ("mirostat",), "Mirostat 1 or 2, in place of the other samplers",
            0, 2, gguf="mirostat"),
    Setting("mirostat_eta", float, ("--mirostat-lr",), ("mirostat_eta",), "Mirostat learning rate (eta)", 0.0,
            gguf="mirostat_eta"),
    Setting("mirostat_tau", float, ("--mirostat-ent",), ("mirostat_tau",), "Mirostat target entropy (tau)", 0.0,
            gguf="mirostat_tau"),
)
