"""A bounds-checked reader over the bytes of a GGUF header."""

from __future__ import annotations

import struct

from kinetic.errors import ModelFileError

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class Cursor:
    """Reads little-endian values from buf at pos; running off the end is a ModelFileError."""

    def __init__(self, buf: memoryview, name: str):
        self.buf = buf
        self.name = name  # the file's name, for messages
        self.pos = 0
        self.section = "the header"

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def fail(self, message: str) -> ModelFileError:
        return ModelFileError(f"{self.name}: {message}")

    def truncated(self) -> ModelFileError:
        return self.fail(f"the file ends inside {self.section} (truncated?)")

    def need(self, n: int) -> None:
        if n > self.remaining:
            raise self.truncated()

    def take(self, n: int) -> memoryview:
        self.need(n)
        start = self.pos
        self.pos += n
        return self.buf[start : self.pos]

    def unpack(self, fmt: struct.Struct) -> tuple:
        self.need(fmt.size)
        values = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return values

    def u32(self) -> int:
        return self.unpack(_U32)[0]

    def u64(self) -> int:
        return self.unpack(_U64)[0]

    def count(self, what: str, min_item_size: int) -> int:
        """A u64 count of items that each take at least min_item_size bytes; an absurd one is refused."""
        n = self.u64()
        if n * min_item_size > self.remaining:
            raise self.fail(f"{what} count {n} does not fit in the file (corrupt or truncated)")
        return n

    def raw_string(self) -> memoryview:
        return self.take(self.count("string length", 1))

    def string(self) -> str:
        return decode_text(self.raw_string())


def decode_text(raw: memoryview) -> str:
    """UTF-8 text; bytes that are not valid UTF-8 are kept as surrogate escapes, never lost."""
    return bytes(raw).decode("utf-8", errors="surrogateescape")
