"""The Hugging Face hub cache: <cache>/models--<org>--<repo>/snapshots/<revision>/<path>, each file a link
into blobs/. The cache is HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub (~/.cache by
default), as huggingface_hub finds it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from kinetic.stores.found import Found, repository_models


def cache_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    home = os.environ.get("HF_HOME") or os.path.join(cache, "huggingface")
    return Path(home) / "hub"


def found() -> list[Found]:
    return cached_models(cache_dir(), "huggingface")


def cached_models(cache: Path, source: str) -> list[Found]:
    """The models of every repository in a hub cache, from its newest snapshot (the one refs/main names,
    else the last written)."""
    found = []
    for folder in sorted(cache.glob("models--*--*")) if cache.is_dir() else ():
        snapshot = newest_snapshot(folder)
        if snapshot is not None:
            found += repository_models(folder.name[len("models--"):].replace("--", "/", 1), snapshot, source)
    return found


def newest_snapshot(folder: Path) -> Optional[Path]:
    main = folder / "refs" / "main"
    named = folder / "snapshots" / main.read_text().strip() if main.is_file() else None
    if named is not None and named.is_dir():
        return named
    snapshots = [path for path in (folder / "snapshots").glob("*") if path.is_dir()]
    return max(snapshots, key=lambda path: path.stat().st_mtime) if snapshots else None
