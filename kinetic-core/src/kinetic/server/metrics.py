"""Counters since start and the request's slot state, shown by /metrics (llama-server's names) and /slots."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

COUNTERS = {
    "prompt_tokens_total": "Number of prompt tokens processed.",
    "prompt_tokens_cached_total": "Number of prompt tokens reused from an earlier request.",
    "prompt_seconds_total": "Prompt process time.",
    "tokens_predicted_total": "Number of generation tokens processed.",
    "tokens_predicted_seconds_total": "Predict process time.",
    "requests_total": "Number of requests answered.",
    "n_tokens_max": "Largest observed n_tokens (prompt and answer).",
}
GAUGES = {
    "prompt_tokens_seconds": "Average prompt throughput in tokens/s.",
    "predicted_tokens_seconds": "Average generation throughput in tokens/s.",
    "requests_processing": "Number of requests processing.",
    "requests_deferred": "Number of requests deferred (waiting for the model).",
}


@dataclass
class Metrics:
    counts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, prompt_run: int, prompt_cached: int, prompt_seconds: float, predicted: int,
               predicted_seconds: float, n_tokens: int) -> None:
        with self.lock:
            c = self.counts
            c["requests_total"] += 1
            c["prompt_tokens_total"] += prompt_run
            c["prompt_tokens_cached_total"] += prompt_cached
            c["prompt_seconds_total"] += prompt_seconds
            c["tokens_predicted_total"] += predicted
            c["tokens_predicted_seconds_total"] += predicted_seconds
            c["n_tokens_max"] = max(c["n_tokens_max"], n_tokens)

    def prometheus(self, processing: int, deferred: int) -> str:
        """Prometheus' text format, every name under llamacpp:."""
        with self.lock:
            values = dict(self.counts)
        values["prompt_tokens_seconds"] = _rate(values["prompt_tokens_total"], values["prompt_seconds_total"])
        values["predicted_tokens_seconds"] = _rate(values["tokens_predicted_total"],
                                                   values["tokens_predicted_seconds_total"])
        values["requests_processing"] = processing
        values["requests_deferred"] = deferred
        lines = []
        for kind, table in (("counter", COUNTERS), ("gauge", GAUGES)):
            for name, help_text in table.items():
                lines += [f"# HELP llamacpp:{name} {help_text}", f"# TYPE llamacpp:{name} {kind}",
                          f"llamacpp:{name} {values[name]:g}"]
        return "\n".join(lines) + "\n"


def _rate(tokens: float, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else 0.0


@dataclass
class Slot:
    """A slot's current or last request, as /slots reports it (llama_answer.slot_report)."""

    id: int = 0
    speculative: bool = False  # the slot drafts (RAD-1)
    id_task: int = -1
    is_processing: bool = False
    n_prompt_tokens: int = 0
    n_prompt_tokens_processed: int = 0
    n_prompt_tokens_cache: int = 0
    n_decoded: int = 0
    has_new_line: bool = False
    n_predict: int = -1  # <= 0: no limit but the context
    job: Any = None  # the served Job, None before the first request
    settings: Any = None  # its SamplingSettings
