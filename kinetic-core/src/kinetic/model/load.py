"""From a model file to a Stack: find the family of general.architecture and let it map the tensors."""

from __future__ import annotations

import os
from typing import Union

from kinetic.errors import ModelFileError
from kinetic.model.blocks import Stack
from kinetic.model.files import open_model
from kinetic.model.loader import Loader
from kinetic.spec import ModelFile


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
    loader.finish()
    return stack
