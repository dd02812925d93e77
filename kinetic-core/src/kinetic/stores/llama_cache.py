"""llama.cpp's cache (common/common.cpp fs_get_cache_directory, common/hf-cache.cpp): LLAMA_CACHE, else
$XDG_CACHE_HOME/llama.cpp, else ~/.cache/llama.cpp. Downloads by URL lie there under their own file names
(older builds also put -hf downloads there, as <org>_<repo>_<file>.gguf); with LLAMA_CACHE set, -hf
downloads go there too, in the Hugging Face hub layout (without it, into the Hugging Face cache)."""

from __future__ import annotations

import os
from pathlib import Path

from kinetic.stores.found import Found, loose_models
from kinetic.stores.hf_cache import cached_models


def cache_dir() -> Path:
    if os.environ.get("LLAMA_CACHE"):
        return Path(os.environ["LLAMA_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "llama.cpp"


def found() -> list[Found]:
    folder = cache_dir()
    return loose_models(folder, "llama.cpp") + cached_models(folder, "llama.cpp")
