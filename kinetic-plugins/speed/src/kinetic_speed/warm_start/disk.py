"""Sequence states on disk, one file each: a header (model, build, tokens, payload digest) and the payload.

Written whole to a temporary name and renamed, so a reader sees a complete file or none; read back only
when every check passes, so a corrupt, truncated, foreign or stale file is ignored (and removed).
Least recently used files go first past max_bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Optional, Sequence

MAGIC = b"KWS1\n"
SUFFIX = ".kws"


class DiskStates:
    def __init__(self, folder: Path, identity: dict, max_bytes: int):
        self.folder, self.identity, self.max_bytes = folder, identity, max_bytes
        self._index: Optional[dict[Path, tuple[int, ...]]] = None  # file -> the tokens its state holds

    def keys(self) -> dict[Path, tuple[int, ...]]:
        if self._index is None:
            self._index = {}
            for path in sorted(self.folder.glob("*" + SUFFIX)) if self.folder.is_dir() else []:
                header = _read_header(path)
                if header is not None and _same(header, self.identity):
                    self._index[path] = tuple(header["tokens"])
        return self._index

    def write(self, tokens: Sequence[int], blob: bytes) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        header = {**self.identity, "tokens": list(tokens), "sha256": hashlib.sha256(blob).hexdigest()}
        name = hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:32]
        path = self.folder / (name + SUFFIX)
        temporary = path.with_suffix(".tmp")
        encoded = json.dumps(header).encode()
        with open(temporary, "wb") as out:
            out.write(MAGIC + struct.pack("<I", len(encoded)) + encoded)
            out.write(blob)
        os.replace(temporary, path)
        self.keys()[path] = tuple(tokens)
        self._trim()

    def read(self, path: Path) -> Optional[bytes]:
        """The payload of path if every check passes; else None, and the file is forgotten and removed."""
        try:
            data = path.read_bytes()
            header, start = _parse_header(data)
            payload = data[start:]
            if _same(header, self.identity) and hashlib.sha256(payload).hexdigest() == header["sha256"]:
                os.utime(path)  # recently used
                return payload
        except (OSError, ValueError, KeyError, TypeError):
            pass
        self.forget(path)
        return None

    def forget(self, path: Path) -> None:
        self.keys().pop(path, None)
        path.unlink(missing_ok=True)

    def _trim(self) -> None:
        files = [(p.stat().st_mtime, p.stat().st_size, p) for p in self.keys() if p.exists()]
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            self.forget(path)
            total -= size


def _same(header: dict, identity: dict) -> bool:
    return all(header.get(key) == value for key, value in identity.items())


def _parse_header(data: bytes) -> tuple[dict, int]:
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + 4:
        raise ValueError("not a state file")
    (size,) = struct.unpack_from("<I", data, len(MAGIC))
    start = len(MAGIC) + 4 + size
    header = json.loads(data[len(MAGIC) + 4 : start])
    if not isinstance(header, dict) or not isinstance(header.get("tokens"), list):
        raise ValueError("bad header")
    return header, start


def _read_header(path: Path) -> Optional[dict]:
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC) + 4)
            if not head.startswith(MAGIC) or len(head) < len(MAGIC) + 4:
                return None
            (size,) = struct.unpack_from("<I", head, len(MAGIC))
            return _parse_header(head + f.read(size))[0]
    except (OSError, ValueError):
        return None
