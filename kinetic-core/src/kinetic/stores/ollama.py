"""Ollama's store (OLLAMA_MODELS, else ~/.ollama/models): manifests/<registry>/<namespace>/<name>/<tag>, JSON
whose layers point at blobs/sha256-<hex>: the model's (application/vnd.ollama.image.model) and a vision
projector's (application/vnd.ollama.image.projector). Names as Ollama gives them: name:tag for its library,
namespace/name:tag for others on its registry, hf.co/org/repo:tag for Hugging Face's, registry/... else."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from kinetic.stores.found import Found

LIBRARY = ("registry.ollama.ai", "library")
MODEL = "application/vnd.ollama.image.model"
PROJECTOR = "application/vnd.ollama.image.projector"


def store_dir() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")


def found() -> list[Found]:
    store = store_dir()
    manifests = store / "manifests"
    if not manifests.is_dir():
        return []
    listed = (manifest_model(store, path) for path in sorted(manifests.glob("*/*/*/*")) if path.is_file())
    return [model for model in listed if model is not None]


def manifest_model(store: Path, manifest: Path) -> Optional[Found]:
    """The model a manifest names (its blob listed even when missing, so `kinetic models` says so), None where
    it names no model layer or is no manifest."""
    try:
        layers = json.loads(manifest.read_text()).get("layers") or []
    except (OSError, ValueError, AttributeError):
        return None
    blobs = {layer.get("mediaType"): blob_path(store, layer.get("digest", "")) for layer in layers
             if isinstance(layer, dict)}
    model = blobs.get(MODEL)
    if model is None:
        return None
    projector = blobs.get(PROJECTOR)
    return Found(model_name(manifest), (model,), "ollama", projector=projector if projector and projector.is_file()
                 else None)


def blob_path(store: Path, digest: str) -> Path:
    return store / "blobs" / digest.replace(":", "-")


def model_name(manifest: Path) -> str:
    registry, namespace, name, tag = manifest.parts[-4:]
    if (registry, namespace) == LIBRARY:
        return f"{name}:{tag}"
    if registry == "registry.ollama.ai":
        return f"{namespace}/{name}:{tag}"
    return f"{registry}/{namespace}/{name}:{tag}"
