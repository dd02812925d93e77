"""A found model as `kinetic models` lists it, from its header alone: size, quantization, architecture and
whether Kinetic runs it (and if not, why, in a few words)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from kinetic.contracts import ModelFile
from kinetic.errors import KineticError
from kinetic.hub.files import quant_of
from kinetic.model import open_model
from kinetic.model.file_type import file_type
from kinetic.stores.found import Found

REASON_END = re.compile(r"; |\. | \(")


@dataclass(frozen=True)
class Described:
    found: Found
    size: int  # bytes, every part
    quant: str  # general.file_type's name, else what the file name shows, else "?"
    arch: str  # general.architecture, "?" where the file cannot be read
    runs: str  # "yes", or "no: <why>"
    model: Optional[ModelFile]  # the opened header where Kinetic runs it

    @property
    def runnable(self) -> bool:
        return self.model is not None


def describe(found: Found) -> Described:
    from kinetic.plugins import plugins

    size = found.size
    named_quant = quant_of(found.path.name) or "?"
    if len(found.parts) > 1:
        return Described(found, size, named_quant, "?", "no: split file", None)
    try:
        model = open_model(found.path)
    except (KineticError, OSError, ValueError) as error:
        return Described(found, size, named_quant, "?", f"no: {short_reason(found, error)}", None)
    quant = file_type(model.metadata)
    quant = named_quant if quant == "unknown" else quant
    arch = model.architecture or "?"
    if model.architecture not in plugins().families:
        return Described(found, size, quant, arch, f"no: architecture {arch}", None)
    return Described(found, size, quant, arch, "yes", model)


def short_reason(found: Found, error: Exception) -> str:
    """The error's first clause, without the file's name it starts with."""
    text = str(error)
    for prefix in (f"{found.path}: ", f"{found.path.name}: ", f"{found.path} ", f"{found.path.name} "):
        text = text.removeprefix(prefix)
    return REASON_END.split(text, 1)[0].rstrip(".")
