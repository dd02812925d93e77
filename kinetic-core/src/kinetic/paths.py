"""Where Kinetic keeps its files: caches under the user's cache directory, never in a project."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """$KINETIC_CACHE, else $XDG_CACHE_HOME/kinetic, else ~/.cache/kinetic; joined with parts."""
    root = os.environ.get("KINETIC_CACHE")
    if not root:
        root = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kinetic")
    return Path(root).joinpath(*parts)


def models_dir() -> Path:
    """Kinetic's own models folder: $KINETIC_MODELS, else ~/.local/share/kinetic/models."""
    root = os.environ.get("KINETIC_MODELS")
    if root:
        return Path(root)
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(data) / "kinetic" / "models"
