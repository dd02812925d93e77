"""Option groups shared by several commands (generation, runtime), added to a typer command's signature."""

from __future__ import annotations

import functools
import inspect
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import typer

from kinetic.contracts.device import CACHE_TYPES
from kinetic.engine.options import ALL_LAYERS, SessionOptions, off_names
from kinetic.errors import KineticError
from kinetic.sampling.names import SETTINGS

_KW = inspect.Parameter.KEYWORD_ONLY


def _option(name: str, annotation: Any, *decls: str, help: str, default: Any = None, **extra: Any) -> inspect.Parameter:
    option = typer.Option(default, *decls, help=help, show_default=False, **extra)
    return inspect.Parameter(name, _KW, default=option, annotation=annotation)


def speed_names(value: Optional[str]) -> frozenset[str]:
    """--off rad1,warm-start -> {"rad1", "warm-start"}; a name no plugin registered is a usage error."""
    try:
        return off_names(value)
    except KineticError as error:
        raise typer.BadParameter(str(error)) from None


def gpu_layers(value: Optional[str]) -> Optional[int]:
    """--gpu-layers (llama.cpp's -ngl): all or auto, or a number; 0 is the CPU."""
    if value is None:
        return None
    if value.strip().lower() in ("all", "auto"):
        return ALL_LAYERS
    if not value.strip().isdigit():
        raise typer.BadParameter(f"{value!r} is not all, auto or a number of layers")
    return int(value)


def reasoning_choice(value: Optional[str]) -> Optional[str]:
    """--reasoning (llama.cpp's -rea): on or off; auto (llama.cpp's default) leaves it to the template, as None."""
    if value is None or value.lower() == "auto":
        return None
    if value.lower() not in ("on", "off"):
        raise typer.BadParameter(f"{value!r} is not on, off or auto")
    return value.lower()


def cache_type(value: str) -> str:
    """--cache-type-k and --cache-type-v (llama.cpp's -ctk, -ctv): one of CACHE_TYPES."""
    if value not in CACHE_TYPES:
        raise typer.BadParameter(f"{value!r} is not a KV cache type Kinetic keeps; use f16 or q8_0")
    return value


UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 10**3, "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
         "g": 1 << 30, "gib": 1 << 30, "gb": 10**9, "t": 1 << 40, "tib": 1 << 40, "tb": 10**12}


def memory_size(value: Optional[str]) -> Optional[int]:
    """--gpu-memory: bytes, or a number with a unit: 2GiB, 1536MiB, 2G (GiB), 2GB (10^9 bytes)."""
    if value is None:
        return None
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", value)
    unit = match and UNITS.get(match[2].lower())
    if unit is None or float(match[1]) * unit < 1 << 20:
        raise typer.BadParameter(f"{value!r} is not an amount of memory of at least 1 MiB; use for example 2GiB or 1536MiB")
    return int(float(match[1]) * unit)


GENERATION = [  # named as the SamplingSettings field each sets
    _option(s.field, Optional[list[str]] if s.kind is list else Optional[s.kind], *s.flags, help=s.help)
    for s in SETTINGS if s.flags
]
N_PREDICT = _option("n_predict", int, "-n", "--n-predict", default=-1, help="most tokens per answer; -1 or 0 for no limit")
ANSWER = [
    _option("system", Optional[str], "--system", help="system prompt"),
    _option("reasoning", Optional[str], "--reasoning", callback=reasoning_choice,
            help="on, off or auto: the model's reasoning (its template's enable_thinking) [default: auto]"),
    N_PREDICT,
    _option("grammar", Optional[str], "--grammar", help="GBNF grammar the answer follows (llama.cpp's dialect)"),
    _option("grammar_file", Optional[Path], "--grammar-file", help="file holding a GBNF grammar"),
    _option("json_schema", Optional[str], "-j", "--json-schema", help="JSON Schema the answer validates against"),
    _option("json_schema_file", Optional[Path], "--json-schema-file", help="file holding a JSON Schema"),
]
CACHE = [
    _option(f"cache_type_{part[0]}", str, f"--cache-type-{part[0]}", default="f16", callback=cache_type,
            help=f"KV cache type of the {part}: f16, or q8_0 for about half the memory [default: f16]")
    for part in ("keys", "values")
]
SIGN_KEY = _option("sign_key", Optional[Path], "--sign-key",
                   help="sign receipts with this Ed25519 secret key file (32 bytes or 64 hex digits)")
RECEIPTS = [_option("receipt", Optional[Path], "--receipt",
                    help="also write a receipt of the answer to FILE, which kinetic verify-receipt reruns"), SIGN_KEY]
GPU_MEMORY = _option("gpu_memory", Optional[str], "--gpu-memory", callback=memory_size,
                     help="the most GPU memory to take, e.g. 2GiB: a mixture of experts keeps the experts that do "
                          "not fit in system memory (Flywheel) [default: all that is free]")
RUNTIME = [
    _option("ctx_size", Optional[int], "-c", "--ctx-size",
            help="most tokens per conversation; 0 uses all the model supports [default: 32768 or the model's]"),
    *CACHE,
    GPU_MEMORY,
    _option("threads", Optional[int], "-t", "--threads", help="CPU threads [default: all]"),
    _option("device", str, "--device", default="auto", help="where the model runs: auto, none (the CPU) or a device name: see kinetic doctor"),
    _option("gpu_layers", Optional[str], "--gpu-layers", callback=gpu_layers,
            help="layers on the GPU (llama.cpp's -ngl): all, a number no less than the model's layers (a layer "
                 "split is not available yet), or 0 for the CPU; without a usable GPU, the CPU [default: all]"),
    _option("chat_template_file", Optional[Path], "--chat-template-file",
            help="Jinja chat template to use instead of the model's own"),
    _option("off", Optional[str], "--off", callback=speed_names,
            help="turn speed technologies off by name, comma-separated: rad1, warm-start, zero-wait, shortlist, "
                 "torque, convoy"),
    _option("no_prompt_cache", bool, "--no-prompt-cache", default=False,
            help="run every prompt from its first token; same as --off warm-start"),
    _option("cache_dir", Optional[Path], "--cache-dir",
            help="where Warm Start keeps prompt states [default: kinetic/warm in the user cache]"),
]


def session_options(options: Mapping[str, Any]) -> SessionOptions:
    """The RUNTIME group's flags as the options a Session loads with; --no-prompt-cache adds warm-start to --off."""
    off = options["off"] | ({"warm-start"} if options["no_prompt_cache"] else frozenset())
    return SessionOptions(device=options["device"], threads=options["threads"], ctx_size=options["ctx_size"],
                          gpu_layers=options["gpu_layers"], chat_template_file=options["chat_template_file"],
                          off=off, state_dir=options["cache_dir"], cache_types=cache_types(options),
                          gpu_memory=options["gpu_memory"])


def cache_types(options: Mapping[str, Any]) -> tuple[str, str]:
    """The CACHE group's flags: (the keys' type, the values')."""
    return options["cache_type_k"], options["cache_type_v"]


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
