"""Kinetic's own models folder (kinetic.paths.models_dir): <org>/<repo>/ as `kinetic pull` fills it, and loose
.gguf files, each named by its stem."""

from __future__ import annotations

from kinetic.paths import models_dir
from kinetic.stores.found import Found, loose_models, organised_models


def found() -> list[Found]:
    root = models_dir()
    return loose_models(root, "folder") + organised_models(root, "folder")
