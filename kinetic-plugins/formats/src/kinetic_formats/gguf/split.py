"""Split GGUF files (model-00001-of-00003.gguf): recognised and refused with what to do."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from kinetic.errors import ModelFileError

_PART = re.compile(r"^(?P<stem>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})\.gguf$")


def refusal(path: Path) -> ModelFileError:
    match = _PART.match(path.name)
    stem = match.group("stem") if match else path.stem
    first = f"{stem}-00001-of-{match.group('count')}.gguf" if match else path.name
    return ModelFileError(
        f"{path.name} is one part of a split model; split files are not read yet. "
        f"Join them first with llama.cpp's llama-gguf-split --merge {first} {stem}.gguf"
    )


def check_name(path: Path) -> None:
    """Refuse a part of a split model by its name, before reading it."""
    match = _PART.match(path.name)
    if match and int(match.group("count")) > 1:
        raise refusal(path)


def check_metadata(path: Path, metadata: Mapping[str, Any]) -> None:
    """Refuse a part of a split model by its split.count, whatever it is called."""
    if int(metadata.get("split.count", 1) or 1) > 1:
        raise refusal(path)
