"""GPT-2's byte-level alphabet: every byte is written as one printable character in BPE vocabularies."""

from __future__ import annotations


def _byte_chars() -> list[str]:
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = [""] * 256
    for byte in printable:
        chars[byte] = chr(byte)
    others = (byte for byte in range(256) if byte not in printable)
    for n, byte in enumerate(others):
        chars[byte] = chr(256 + n)
    return chars


BYTE_CHARS = _byte_chars()
CHAR_BYTES = {char: byte for byte, char in enumerate(BYTE_CHARS)}

# bytes read as latin-1 are one character per byte; this table turns them into the alphabet
_LATIN1_TO_ALPHABET = {byte: char for byte, char in enumerate(BYTE_CHARS)}


def encode_bytes(text: str) -> str:
    """The text's UTF-8 bytes, spelled in the byte-level alphabet."""
    return text.encode("utf-8", "surrogatepass").decode("latin-1").translate(_LATIN1_TO_ALPHABET)
