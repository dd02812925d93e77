"""A speed technology: exact, on by default, turned off by name with --off."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class SpeedTechnology:
    name: str  # the --off name: rad1, warm-start, ...
    title: str  # as printed: RAD-1, Warm Start, ...
    attach: Callable[[Any], bool]  # (session) plugs it into a loaded Session; False if the device cannot host it
