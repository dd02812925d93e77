"""Option groups shared by several commands (generation, runtime), added to a typer command's signature."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable, Optional

import typer

_KW = inspect.Parameter.KEYWORD_ONLY


def _option(name: str, annotation: Any, *decls: str, help: str, default: Any = None, **extra: Any) -> inspect.Parameter:
    option = typer.Option(default, *decls, help=help, show_default=False, **extra)
    return inspect.Parameter(name, _KW, default=option, annotation=annotation)


SPEED_NAMES = ("rad1", "warm-start", "zero-wait", "shortlist", "torque", "convoy")  # --off's names, as documented


def speed_names(value: Optional[str]) -> frozenset[str]:
    """--off rad1,warm-start -> {"rad1", "warm-start"}; an unknown name is a usage error."""
    names = frozenset(name.strip() for name in (value or "").split(",") if name.strip())
    unknown = sorted(names - set(SPEED_NAMES))
    if unknown:
        raise typer.BadParameter(f"unknown speed technology {unknown[0]!r}; use a comma-separated list of "
                                 f"{', '.join(SPEED_NAMES)}")
    return names


# name -> the SamplingSettings field it sets
GENERATION = [
    _option("temp", Optional[float], "--temp", help="temperature; 0 always picks the likeliest token [default: the model's]"),
    _option("top_k", Optional[int], "--top-k", help="sample from the N likeliest tokens; 0 for all"),
    _option("top_p", Optional[float], "--top-p", help="sample from the likeliest tokens that add up to P"),
    _option("min_p", Optional[float], "--min-p", help="skip tokens less than P times as likely as the best"),
    _option("repeat_penalty", Optional[float], "--repeat-penalty", help="penalty for repeating recent tokens; 1 for none"),
    _option("seed", Optional[int], "-s", "--seed", help="seed for repeatable sampling"),
    _option("presence_penalty", Optional[float], "--presence-penalty", help="subtracted once from the logits of recent tokens"),
    _option("frequency_penalty", Optional[float], "--frequency-penalty", help="subtracted per time seen"),
    _option("typical_p", Optional[float], "--typical", help="locally typical sampling; 1 for none"),
    _option("top_n_sigma", Optional[float], "--top-nsigma", help="keep tokens within N standard deviations of the best logit; -1 for none"),
    _option("xtc_probability", Optional[float], "--xtc-probability", help="XTC: the chance of dropping the likeliest tokens"),
    _option("xtc_threshold", Optional[float], "--xtc-threshold", help="XTC: how likely a token must be to be dropped"),
    _option("dry_multiplier", Optional[float], "--dry-multiplier", help="DRY repetition penalty; 0 for none"),
    _option("dry_base", Optional[float], "--dry-base", help="DRY base"),
    _option("dry_allowed_length", Optional[int], "--dry-allowed-length", help="DRY: repeats this long are free"),
    _option("dry_penalty_last_n", Optional[int], "--dry-penalty-last-n", help="DRY: tokens looked back at; -1 for all"),
    _option("dry_sequence_breakers", Optional[list[str]], "--dry-sequence-breaker",
            help="text that ends a repetition for DRY, repeatable; none for none"),
    _option("mirostat", Optional[int], "--mirostat", help="Mirostat 1 or 2, in place of the other samplers"),
    _option("mirostat_eta", Optional[float], "--mirostat-lr", help="Mirostat learning rate (eta)"),
    _option("mirostat_tau", Optional[float], "--mirostat-ent", help="Mirostat target entropy (tau)"),
]
ANSWER = [
    _option("system", Optional[str], "--system", help="system prompt"),
    _option("reasoning", Optional[str], "--reasoning", help="on or off: the model's reasoning (its template's enable_thinking)"),
    _option("n_predict", int, "-n", "--n-predict", default=-1, help="most tokens per answer; -1 or 0 for no limit"),
]
RUNTIME = [
    _option("ctx_size", Optional[int], "-c", "--ctx-size",
            help="most tokens per conversation; 0 uses all the model supports [default: 32768 or the model's]"),
    _option("threads", Optional[int], "-t", "--threads", help="CPU threads [default: all]"),
    _option("device", str, "--device", default="auto", help="where the model runs: auto, none (the CPU) or a device name: see kinetic doctor"),
    _option("gpu_layers", Optional[int], "--gpu-layers", help="most layers on the GPU [default: as many as fit]"),
    _option("chat_template_file", Optional[Path], "--chat-template-file",
            help="Jinja chat template to use instead of the model's own"),
    _option("off", Optional[str], "--off", callback=speed_names,
            help=f"turn speed technologies off, comma-separated: {', '.join(SPEED_NAMES)}"),
    _option("no_prompt_cache", bool, "--no-prompt-cache", default=False,
            help="run every prompt from its first token; same as --off warm-start"),
    _option("cache_dir", Optional[Path], "--cache-dir",
            help="where Warm Start keeps prompt states [default: kinetic/warm in the user cache]"),
]


def speed_off(options: dict[str, Any]) -> frozenset[str]:
    """--off's names, with warm-start when --no-prompt-cache is given."""
    return options["off"] | ({"warm-start"} if options["no_prompt_cache"] else frozenset())


def with_options(*groups: list[inspect.Parameter]) -> Callable:
    """Add the groups' options to a command; it receives them as one dict, `options`."""
    added = [param for group in groups for param in group]

    def decorate(command: Callable) -> Callable:
        own = inspect.signature(command)
        kept = [p for p in own.parameters.values() if p.name != "options"]

        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            options = {p.name: kwargs.pop(p.name) for p in added}
            return command(**kwargs, options=options)

        wrapper.__signature__ = own.replace(parameters=kept + added)
        wrapper.__annotations__ = {**{p.name: p.annotation for p in kept + added}, "return": own.return_annotation}
        return wrapper

    return decorate


def sampling_overrides(options: dict[str, Any]) -> dict[str, Any]:
    """The sampling settings the user gave explicitly, by SamplingSettings field."""
    chosen = {p.name: options[p.name] for p in GENERATION if options.get(p.name) is not None}
    if chosen.get("dry_sequence_breakers") == ["none"]:
        chosen["dry_sequence_breakers"] = []
    return chosen
