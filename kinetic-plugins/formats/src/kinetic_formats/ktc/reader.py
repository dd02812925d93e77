"""Opening a .ktc file (docs/FORMAT.md) as a memory-mapped ModelFile: its key/value sections and tensor table are
read as GGUF's records, the tensors left in place. Hashes are not computed here: `kinetic verify` does that."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kinetic.contracts import ModelFile
from kinetic.errors import ModelFileError
from kinetic_formats.gguf.cursor import Cursor
from kinetic_formats.gguf.reader import map_file, place_tensors, read_metadata, read_tensor_infos, tensor_types
from kinetic_formats.ktc.layout import ALIGNMENT, MAGIC, VERSION, Layout, Section, read_layout

KEY_VALUE_SECTIONS = ("metadata", "tokenizer", "chat_template")


def is_ktc(head: bytes) -> bool:
    return head[:4] == MAGIC


def open_ktc(path: Path) -> ModelFile:
    """Open a .ktc file; any fault in its layout or records is one ModelFileError naming the file."""
    path = Path(path)
    data = map_file(path)
    layout = checked_layout(path, data)
    metadata: dict = {}
    for name in KEY_VALUE_SECTIONS:
        cur = _section_cursor(path, data, layout.sections[name])
        metadata.update(read_metadata(cur, cur.u64()))
        _ends(cur)
    cur = _section_cursor(path, data, layout.sections["tensors"])
    infos = read_tensor_infos(cur, cur.u64(), tensor_types())
    _ends(cur)
    weights = layout.sections["weights"]
    within = Cursor(memoryview(data)[: weights.offset + weights.length], path.name)
    tensors = place_tensors(within, infos, weights.offset, ALIGNMENT)
    return ModelFile(path=path, format="ktc", version=VERSION, metadata=metadata, tensors=tensors, data=data,
                     profile=_profile(path, data, layout.sections["profile"]))


def checked_layout(path: Path, data: np.ndarray) -> Layout:
    try:
        return read_layout(data)
    except ValueError as error:
        raise ModelFileError(f"{path.name}: {error}") from None


def _section_cursor(path: Path, data: np.ndarray, section: Section) -> Cursor:
    cur = Cursor(memoryview(data)[section.offset : section.offset + section.length], path.name)
    cur.section = f"section {section.name!r}"
    return cur


def _profile(path: Path, data: np.ndarray, section: Section) -> dict:
    try:
        profile = json.loads(bytes(data[section.offset : section.offset + section.length]))
    except ValueError:
        profile = None
    if not isinstance(profile, dict):
        raise ModelFileError(f"{path.name}: the profile section is not a JSON object")
    return profile


def _ends(cur: Cursor) -> None:
    if cur.remaining:
        raise cur.fail(f"{cur.section} holds {cur.remaining} bytes after its records")
