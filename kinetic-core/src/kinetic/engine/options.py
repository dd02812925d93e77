"""How to load a model: the one options object a Session is built from, whether the options come from
command-line flags (kinetic.cli.options.session_options), the environment (SessionOptions.from_env, for
the WSGI entry point) or Python keywords (SessionOptions(device="cpu", ctx_size=256))."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Mapping, Optional

from kinetic.errors import KineticError


ALL_LAYERS = -1  # --gpu-layers all (or auto), llama.cpp's -ngl all


def off_names(text: Optional[str]) -> frozenset[str]:
    """"rad1, warm-start" (--off, KINETIC_OFF) -> {"rad1", "warm-start"}; a KineticError for a name no plugin
    registered, naming those that are."""
    names = frozenset(name.strip() for name in (text or "").split(",") if name.strip())
    if not names:
        return names
    from kinetic.plugins import plugins  # loaded only when needed, so that --help and info stay quick

    registered = [technology.name for technology in plugins().speed_technologies]
    unknown = sorted(names - set(registered))
    if unknown:
        raise KineticError(f"unknown speed technology {unknown[0]!r}; use a comma-separated list of "
                           f"{', '.join(registered) or 'none: no speed technology is registered'}")
    return names


@dataclass(frozen=True)
class SessionOptions:
    device: str = "auto"  # a registered device's name, or auto
    threads: Optional[int] = None  # CPU threads; None for all
    ctx_size: Optional[int] = None  # -c: None for the default, 0 for all the model supports
    gpu_layers: Optional[int] = None  # --gpu-layers: None not given, ALL_LAYERS, 0 the CPU, N at most N layers
    chat_template_file: Optional[Path] = None  # a Jinja template used instead of the model's own
    off: Collection[str] = frozenset()  # the names of the speed technologies not to attach
    state_dir: Optional[Path] = None  # where Warm Start keeps states on disk; None for its default
    cache_types: tuple[str, str] = ("f16", "f16")  # -ctk, -ctv: the KV cache's keys' and values' types
    gpu_memory: Optional[int] = None  # --gpu-memory: the most bytes of GPU memory to take; None for all free

    def __post_init__(self) -> None:
        object.__setattr__(self, "off", frozenset(self.off))  # any collection of names, e.g. off=("rad1",)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SessionOptions:
        """KINETIC_DEVICE, KINETIC_THREADS, KINETIC_CTX_SIZE, KINETIC_CHAT_TEMPLATE_FILE and KINETIC_OFF, as
        serve's --device, -t, -c, --chat-template-file and --off; unset or empty ones keep their defaults."""
        template = env.get("KINETIC_CHAT_TEMPLATE_FILE")
        return cls(device=env.get("KINETIC_DEVICE") or "auto", threads=_integer(env, "KINETIC_THREADS"),
                   ctx_size=_integer(env, "KINETIC_CTX_SIZE"), chat_template_file=Path(template) if template else None,
                   off=off_names(env.get("KINETIC_OFF")))


def _integer(env: Mapping[str, str], name: str) -> Optional[int]:
    value = env.get(name, "").strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise KineticError(f"{name} must be a whole number, not {value!r}") from None
