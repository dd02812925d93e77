"""GGUF metadata values: scalars, strings and (nested) arrays, read zero-copy where possible."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Sequence
from typing import Any

import numpy as np

from kinetic_formats.gguf.cursor import Cursor, decode_text

# GGUF metadata value type ids (gguf.h: enum gguf_type)
STRING, ARRAY = 8, 9
_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRUCTS = {t: struct.Struct("<" + f) for t, f in _FORMATS.items()}
SCALARS = {t: np.dtype("<" + f) for t, f in _FORMATS.items()}
_MAX_NESTING = 8
_MIN_SIZE = {**{t: d.itemsize for t, d in SCALARS.items()}, STRING: 8, ARRAY: 12}


class StringArray(Sequence):
    """An array of GGUF strings, decoded on access: vocabularies of 250k tokens stay cheap to open."""

    def __init__(self, buf: memoryview, starts: np.ndarray, ends: np.ndarray):
        self._buf, self._starts, self._ends = buf, starts, ends

    def __len__(self) -> int:
        return len(self._starts)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return decode_text(self._buf[self._starts[index] : self._ends[index]])

    def raw(self, index: int) -> bytes:
        """The stored bytes of one string."""
        return bytes(self._buf[self._starts[index] : self._ends[index]])

    def __repr__(self) -> str:
        return f"StringArray({len(self)} strings)"


def read_value(cur: Cursor, value_type: int, depth: int = 0) -> Any:
    """One metadata value of the given type id."""
    if value_type in _STRUCTS:
        value = cur.unpack(_STRUCTS[value_type])[0]
        return bool(value) if value_type == 7 else value
    if value_type == STRING:
        return cur.string()
    if value_type == ARRAY:
        return read_array(cur, depth)
    raise cur.fail(f"unknown metadata value type {value_type} in {cur.section}")


def read_array(cur: Cursor, depth: int) -> Any:
    if depth >= _MAX_NESTING:
        raise cur.fail(f"arrays nested more than {_MAX_NESTING} deep in {cur.section}")
    item_type = cur.u32()
    if item_type not in _MIN_SIZE:
        raise cur.fail(f"unknown metadata value type {item_type} in {cur.section}")
    n = cur.count("array", _MIN_SIZE[item_type])
    if item_type in SCALARS:
        dtype = SCALARS[item_type]
        return np.frombuffer(cur.take(n * dtype.itemsize), dtype=dtype)
    if item_type == STRING:
        return read_string_array(cur, n)
    return [read_array(cur, depth + 1) for _ in range(n)]


def read_string_array(cur: Cursor, n: int) -> StringArray:
    """Walk n strings, remembering where each starts and ends, without decoding them."""
    buf, pos, size = cur.buf, cur.pos, len(cur.buf)
    unpack_u64 = struct.Struct("<Q").unpack_from
    starts, ends = array("q", bytes(8 * n)), array("q", bytes(8 * n))  # machine ints, not a list's int objects
    for i in range(n):
        if pos + 8 > size:
            raise cur.truncated()
        length = unpack_u64(buf, pos)[0]
        pos += 8
        starts[i] = pos
        pos += length
        if pos > size:
            raise cur.truncated()
        ends[i] = pos
    cur.pos = pos
    return StringArray(buf, np.frombuffer(starts, np.int64), np.frombuffer(ends, np.int64))
