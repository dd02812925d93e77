"""LM Studio's models: ~/.lmstudio/models/<org>/<repo>/<file>.gguf."""

from __future__ import annotations

from pathlib import Path

from kinetic.stores.found import Found, organised_models


def found() -> list[Found]:
    return organised_models(Path.home() / ".lmstudio" / "models", "lmstudio")
