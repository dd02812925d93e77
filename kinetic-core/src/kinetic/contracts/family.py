"""A model family: GGUF architecture names and the builder that maps tensors onto blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Family:
    """architectures: the general.architecture values this family answers to."""

    name: str
    architectures: tuple[str, ...]
    build: Callable[[Any], Any]  # loader -> Stack of blocks
