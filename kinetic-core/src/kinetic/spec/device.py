"""A device: where a stack of blocks runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Device:
    """probe() returns None when usable, else the one-line reason it is not."""

    name: str  # "cpu", "cuda", "vulkan"
    probe: Callable[[], Optional[str]]
    upload: Callable[[Any, Any], Any]  # (stack, options) -> runner, or raises a refusal naming why
