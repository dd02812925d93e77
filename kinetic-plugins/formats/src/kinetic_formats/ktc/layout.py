"""The .ktc layout (docs/FORMAT.md): the header, the manifest and where every part lies, checked without hashing."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Optional

import numpy as np

MAGIC = b"KTC1"
VERSION = 1
HEADER = struct.Struct("<4sIQQQQQ16s")  # magic, version, manifest offset and length, signature's, file length
HEADER_SIZE = 64
SIGNATURE_SIZE = 96  # an Ed25519 public key, then the signature of the manifest
ALIGNMENT = 64
SECTIONS = ("metadata", "tokenizer", "chat_template", "tensors", "weights", "profile")


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    length: int
    blake3: str


@dataclass(frozen=True)
class Layout:
    manifest: bytes
    signature: Optional[bytes]  # SIGNATURE_SIZE bytes, or None for an unsigned file
    sections: dict[str, Section]


def aligned(offset: int) -> int:
    return -(-offset // ALIGNMENT) * ALIGNMENT


def header(manifest_length: int, signed: bool, file_length: int) -> bytes:
    signature_at = HEADER_SIZE + manifest_length if signed else 0
    return HEADER.pack(MAGIC, VERSION, HEADER_SIZE, manifest_length, signature_at, SIGNATURE_SIZE if signed else 0,
                       file_length, bytes(16))


def manifest(sections: list[Section]) -> bytes:
    listed = [{"blake3": s.blake3, "length": s.length, "name": s.name, "offset": s.offset} for s in sections]
    return json.dumps({"format": VERSION, "sections": listed}, sort_keys=True, separators=(",", ":")).encode()


def read_layout(data: np.ndarray) -> Layout:
    """The parts of a .ktc file (data: its bytes), every offset, length and zero byte checked; a ValueError saying
    what is wrong otherwise."""
    if len(data) < HEADER_SIZE:
        raise ValueError("the file is shorter than a .ktc header (truncated)")
    magic, version, manifest_at, manifest_length, signature_at, signature_length, length, zeros = \
        HEADER.unpack(bytes(data[: HEADER.size]))
    if magic != MAGIC:
        raise ValueError(f"not a .ktc file (it starts with {magic!r}, not {MAGIC!r})")
    if version != VERSION:
        raise ValueError(f".ktc format version {version} is not supported (version {VERSION} is)")
    if length != len(data):
        raise ValueError(f"the header says the file has {length} bytes and it has {len(data)} (truncated or extended)")
    signed = signature_length == SIGNATURE_SIZE and signature_at == HEADER_SIZE + manifest_length
    if manifest_at != HEADER_SIZE or zeros != bytes(16) or not (signed or signature_at == signature_length == 0):
        raise ValueError("the header is damaged")
    end = HEADER_SIZE + manifest_length + signature_length
    if end > length:
        raise ValueError("the manifest reaches past the end of the file (truncated)")
    raw = bytes(data[HEADER_SIZE : HEADER_SIZE + manifest_length])
    sections = _sections(raw)
    _check_coverage(data, end, sections)
    return Layout(raw, bytes(data[end - SIGNATURE_SIZE : end]) if signed else None, {s.name: s for s in sections})


def _sections(raw: bytes) -> list[Section]:
    try:
        listed = json.loads(raw)
        sections = [Section(s["name"], s["offset"], s["length"], s["blake3"]) for s in listed["sections"]]
        fine = listed["format"] == VERSION and all(isinstance(s.offset, int) and isinstance(s.length, int) and
                                                   isinstance(s.blake3, str) for s in sections)
    except (ValueError, KeyError, TypeError):
        raise ValueError("the manifest is damaged (not the JSON docs/FORMAT.md describes)") from None
    if not fine or tuple(s.name for s in sections) != SECTIONS:
        raise ValueError(f"the manifest must list the sections {', '.join(SECTIONS)} in that order")
    return sections


def _check_coverage(data: np.ndarray, start: int, sections: list[Section]) -> None:
    """Every section aligned, in order, inside the file and ending it, with only zero bytes before each."""
    at = start
    for s in sections:
        if s.offset % ALIGNMENT or s.offset < at or s.length < 0 or s.offset - at >= ALIGNMENT:
            raise ValueError(f"section {s.name!r} is not where the format puts it")
        if data[at : s.offset].any():
            raise ValueError(f"bytes before section {s.name!r} belong to no section")
        at = s.offset + s.length
    if at != len(data):
        raise ValueError("bytes after the last section belong to no section" if at < len(data) else
                         "the last section reaches past the end of the file (truncated)")
