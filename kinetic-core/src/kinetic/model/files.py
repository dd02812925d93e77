"""Opening a model file with whichever registered format recognises it."""

from __future__ import annotations

import os
from pathlib import Path

from kinetic.errors import ModelFileError, file_error
from kinetic.spec import ModelFile


def open_model(path: str | os.PathLike) -> ModelFile:
    """Open a model file (GGUF, .ktc, ...) through the model-format plugins; reads only the header."""
    from kinetic.plugins import plugins

    path = Path(path)
    head = read_head(path)
    formats = list(plugins().model_formats)
    for model_format in formats:
        if model_format.sniff(head):
            return model_format.open(path)
    by_suffix = [f for f in formats if path.suffix.lower() in f.suffixes]
    if by_suffix:  # a .gguf file with a wrong magic: let its reader say what is wrong
        return by_suffix[0].open(path)
    known = ", ".join(f.name.upper() for f in formats) or "nothing: no model-format plugin is loaded; run kinetic doctor"
    raise ModelFileError(f"{path.name}: not a model file Kinetic reads (it starts with {head[:4]!r}; reads {known})")


def read_head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(8)
    except OSError as error:
        raise file_error(path, error) from None
