"""A model family: GGUF architecture names and the builder that maps a file's tensors onto blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader


@dataclass(frozen=True)
class Family:
    """A family plugin registers one through register_families; the core looks it up by a model
    file's general.architecture when it loads the file (kinetic.model.load.load_stack)."""

    name: str
    """The family's own name, as `kinetic doctor` lists it."""

    architectures: tuple[str, ...]
    """The general.architecture values this family answers to; each is a key of the families registry."""

    build: Callable[[Loader], Stack]
    """Called by load_stack once per model load, with a Loader over the file: reads the hyper-parameters
    and weights it needs through the loader and returns the Stack of blocks. The core then calls
    loader.finish(), which refuses a file holding a tensor build() did not map."""
