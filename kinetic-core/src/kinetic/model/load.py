"""Opening a model file with whichever registered format recognises it, and mapping it onto a Stack through
the family of its general.architecture."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Union

from kinetic.contracts import ModelFile
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError, file_error


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


# read after pooling, not blocks: a reranker's classification head (kinetic.engine.ranking) and an embedding
# model's projections of its pooled vector (EmbeddingGemma's; kinetic.engine.embedding)
AFTER_POOLING = ("cls.", "dense_2.", "dense_3.")


def load_stack(path_or_model: Union[str, os.PathLike, ModelFile]) -> Stack:
    """The file's Stack of blocks, or a ModelFileError naming what is not supported yet."""
    from kinetic.plugins import plugins

    model = path_or_model if isinstance(path_or_model, ModelFile) else open_model(path_or_model)
    if not model.architecture:
        raise ModelFileError("the file names no architecture (general.architecture is missing)")
    family = plugins().families.get(model.architecture)
    if family is None:
        raise ModelFileError(f"architecture {model.architecture} is not supported yet")
    loader = Loader(model)
    stack = family.build(loader)
    for prefix in AFTER_POOLING:
        loader.leave(prefix)
    loader.finish()
    return stack
