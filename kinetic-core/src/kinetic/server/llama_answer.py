"""The answers of llama-server's /completion and /infill, field for field (server-task.cpp's
to_json_non_oaicompat): the final object, the streamed pieces, completion_probabilities, timings and
generation_settings. llamacpp.Completion and llamacpp.Infill write them; the OpenAI routes add timings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kinetic.server.metrics import Slot
from kinetic.server.served import Piece, Run, settings_report

# the settings /slots leaves out of a slot's params (llama-server's task_params::to_json(only_metrics))
NOT_IN_SLOTS = frozenset({"dry_sequence_breakers", "stop", "logit_bias"})
# llama.cpp's sampler chain by its names, in the order Kinetic runs it (the docs' "Samplers run in ...")
SAMPLERS = ("penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature")


@dataclass(frozen=True)
class Asked:
    """What the request asked of the answer's shape: a stream, the token ids (return_tokens), n_probs, and only
    some of the final answer's fields (response_fields)."""

    stream: bool = False
    return_tokens: bool = False
    n_probs: int = 0
    response_fields: tuple[str, ...] = ()


def token_text(raw: bytes) -> str:
    """A token's bytes as text, a UTF-8 character cut at the end left out, as llama-server's validate_utf8 does."""
    for back in range(1, min(4, len(raw)) + 1):
        lead = raw[-back]
        needs = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 0
        if needs > back:
            raw = raw[:-back]
            break
    return raw.decode("utf-8", "replace")


def probabilities(tokenizer, pieces: list[Piece]) -> list[dict[str, Any]]:
    """completion_probabilities: per token, its id, the text sent for it, its log-probability and the n_probs
    likeliest alternatives, from the raw logits (post_sampling_probs off)."""
    def entry(token: int, text: str, raw: bytes, logprob: float) -> dict[str, Any]:
        return {"id": token, "token": text, "bytes": list(raw), "logprob": logprob}

    out = []
    for piece in pieces:
        scored = piece.logprobs
        if scored is None:
            continue
        top = [entry(t, token_text(tokenizer.token_bytes(t)), tokenizer.token_bytes(t), lp) for t, lp in scored.top]
        out.append({**entry(scored.token, piece.text, piece.text.encode(), scored.logprob), "top_logprobs": top})
    return out


def generation_settings(settings, job) -> dict[str, Any]:
    """The settings an answer was generated with, under llama-server's names; the seed is the one used."""
    report = settings_report(settings)
    report["temperature"] = report.pop("temp")
    report["logit_bias"] = [{"bias": bias, "token": token} for token, bias in report["logit_bias"]]
    limit = job.max_tokens if job.max_tokens > 0 else -1
    return {**report, "dynatemp_range": 0.0, "dynatemp_exponent": 1.0, "stop": list(job.stops),
            "max_tokens": limit, "n_predict": limit, "n_keep": 0, "n_discard": 0, "ignore_eos": False,
            "stream": job.stream, "n_probs": job.top_logprobs or 0, "min_keep": 0,
            "samplers": list(SAMPLERS), "timings_per_token": False, "post_sampling_probs": False, "lora": []}


def slot_report(slot: Slot, n_ctx: int) -> dict[str, Any]:
    """One slot as /slots shows it: the task fields once it ran a request, and (Kinetic's addition) its prompt."""
    report = {"id": slot.id, "n_ctx": n_ctx, "speculative": slot.speculative, "is_processing": slot.is_processing}
    if slot.job is None:
        return report
    remain = slot.n_predict - slot.n_decoded if slot.n_predict > 0 else -1
    return {**report, "id_task": slot.id_task, "n_prompt_tokens": slot.n_prompt_tokens,
            "n_prompt_tokens_processed": slot.n_prompt_tokens_processed,
            "n_prompt_tokens_cache": slot.n_prompt_tokens_cache,
            "params": {key: value for key, value in generation_settings(slot.settings, slot.job).items()
                       if key not in NOT_IN_SLOTS},
            "next_token": [{"has_next_token": slot.is_processing, "has_new_line": slot.has_new_line,
                            "n_remain": remain, "n_decoded": slot.n_decoded}],
            "prompt": slot.job.prompt_text}


def timings(run: Run) -> dict[str, float]:
    """The prompt's and the answer's token counts, times and speeds; cache_n: prompt tokens reused."""
    t = run.timings
    predicted_n = run.usage.completion_tokens

    def per(n: int, seconds: float) -> tuple[float, float]:
        return (seconds * 1000 / n if n else 0.0), (n / seconds if seconds > 0 else 0.0)

    prompt_per_token, prompt_per_second = per(t.prompt_tokens, t.prompt_seconds)
    predicted_per_token, predicted_per_second = per(predicted_n, t.generate_seconds)
    return {"cache_n": run.usage.cached_tokens, "prompt_n": t.prompt_tokens, "prompt_ms": t.prompt_seconds * 1000,
            "prompt_per_token_ms": prompt_per_token, "prompt_per_second": prompt_per_second,
            "predicted_n": predicted_n, "predicted_ms": t.generate_seconds * 1000,
            "predicted_per_token_ms": predicted_per_token, "predicted_per_second": predicted_per_second}


def stop_type(run: Run) -> str:
    """word: a stop string; eos: an end-of-generation token; limit: n_predict or the context; none: cut off."""
    if run.stop_word:
        return "word"
    return {"stop": "eos", "length": "limit"}.get(run.finish_reason, "none")


def kept_probabilities(run: Run, tokenizer, pieces: list[Piece]) -> list[dict[str, Any]]:
    """The answer's probabilities without those of the stop string's tokens, as llama-server drops them."""
    scored = probabilities(tokenizer, pieces)
    if run.stop_word:
        dropped = len(tokenizer.encode(run.stop_word, add_special=False, parse_special=False))
        scored = scored[: max(0, len(scored) - dropped)]
    return scored


def final(run: Run, asked: Asked, name: str, pieces: list[Piece]) -> dict[str, Any]:
    """The whole answer, or with a stream the last event (its content and tokens came in the pieces)."""
    tokenizer = run.served.session.tokenizer
    content = "" if asked.stream else run.cut("".join(piece.text for piece in pieces))
    tokens = [piece.token for piece in pieces if piece.token is not None]
    answer = {
        "index": 0, "content": content, "tokens": tokens if asked.return_tokens and not asked.stream else [],
        "id_slot": run.slot_id, "stop": True, "model": name, "tokens_predicted": run.usage.completion_tokens,
        "tokens_evaluated": run.usage.prompt_tokens, "generation_settings": generation_settings(run.settings, run.job),
        "prompt": run.job.prompt_text, "has_new_line": "\n" in "".join(piece.text for piece in pieces),
        "truncated": run.truncated, "stop_type": stop_type(run), "stopping_word": run.stop_word,
        "tokens_cached": run.tokens_held, "timings": timings(run),
    }
    if asked.n_probs and not asked.stream:
        answer["completion_probabilities"] = kept_probabilities(run, tokenizer, pieces)
    return picked(answer, asked.response_fields) if asked.response_fields else answer


def picked(answer: dict[str, Any], paths: tuple[str, ...]) -> dict[str, Any]:
    """response_fields: only the fields these paths name ("a/b" for b inside a), each under its path; a path
    that names nothing is left out (llama-server's json_get_nested_values)."""
    out = {}
    for path in paths:
        value: Any = answer
        for key in path.split("/"):
            if not isinstance(value, dict) or key not in value:
                break
            value = value[key]
        else:
            out[path] = value
    return out


def partial(run: Run, piece: Piece, n_decoded: int, asked: Asked) -> Optional[dict[str, Any]]:
    """One streamed piece: a token (its text may be held back while it could start a stop string) or held-back
    text released at the end; None for a piece with neither."""
    if piece.token is None and not piece.text:
        return None
    event = {"index": 0, "content": piece.text, "tokens": [] if piece.token is None else [piece.token],
             "stop": False, "id_slot": run.slot_id, "tokens_predicted": n_decoded,
             "tokens_evaluated": len(run.job.prompt)}
    if asked.n_probs and piece.logprobs is not None:
        event["completion_probabilities"] = probabilities(run.served.session.tokenizer, [piece])
    return event
