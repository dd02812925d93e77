"""The files of a Hugging Face repository as pull sees them: GGUF models (a file, or every part of a split
one), their quantization read from the file name, and vision projectors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Optional

# a quantization's name between separators: Q4_K_M, Q8_0, IQ4_XS, TQ1_0, BF16, F16, MXFP4_MOE ...
QUANT = re.compile(r"(?<![A-Z0-9])((?:I?Q|TQ)\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4(?:_MOE)?)(?![A-Z0-9])", re.I)
SPLIT_PART = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.I)


@dataclass(frozen=True)
class RemoteFile:
    name: str  # path in the repository, e.g. "Q4_K_M/Model-Q4_K_M-00001-of-00002.gguf"
    size: int
    sha256: Optional[str]  # what the hub publishes for an LFS file
    blob_id: Optional[str]  # the git blob hash, the check for a file outside LFS


@dataclass(frozen=True)
class Model:
    """One GGUF model of the repository: one file, or the parts of a split one in order."""

    parts: tuple[RemoteFile, ...]
    quant: Optional[str]  # upper case, None where the name shows none

    @property
    def size(self) -> int:
        return sum(part.size for part in self.parts)


def quant_of(name: str) -> Optional[str]:
    """The quantization a file's name shows (its file name first, then its folders), upper case."""
    path = PurePosixPath(name)
    for text in (path.name, *reversed(path.parent.parts)):
        found = QUANT.findall(text)
        if found:
            return found[-1].upper()
    return None


def shows_quant(name: str, quant: str) -> bool:
    """Whether a file's name (or folder) shows quant, any case, between separators: Q4_K_M in m-Q4_K_M.gguf,
    UD-Q4_K_XL in m-UD-Q4_K_XL.gguf, not Q4_K in m-Q4_K_M.gguf."""
    return re.search(rf"(?<![A-Z0-9]){re.escape(quant)}(?![A-Z0-9_])", name, re.I) is not None


def is_projector(name: str) -> bool:
    return "mmproj" in PurePosixPath(name).name.lower()


def models(files: list[RemoteFile]) -> list[Model]:
    """The repository's GGUF models, vision projectors left out, split parts joined, sorted by size."""
    groups: dict[str, list[RemoteFile]] = {}
    for file in files:
        if file.name.lower().endswith(".gguf") and not is_projector(file.name):
            groups.setdefault(SPLIT_PART.sub("", file.name), []).append(file)
    found = [Model(tuple(sorted(parts, key=lambda part: part.name)), quant_of(parts[0].name))
             for parts in groups.values()]
    return sorted(found, key=lambda model: (model.size, model.parts[0].name))


def is_later_part(name: str) -> bool:
    """Whether name is a split model's part other than its first."""
    part = SPLIT_PART.search(name)
    return part is not None and int(part[1]) > 1


def model_holding(files: list[RemoteFile], name: str) -> Optional[Model]:
    """The model one of whose files is name, or None."""
    return next((model for model in models(files) if name in {part.name for part in model.parts}), None)


def projector(files: list[RemoteFile]) -> Optional[RemoteFile]:
    """The repository's vision projector, the float16 one where there are several; None without one."""
    found = sorted((file for file in files if is_projector(file.name) and file.name.lower().endswith(".gguf")),
                   key=lambda file: (quant_of(file.name) != "F16", file.name))
    return found[0] if found else None
