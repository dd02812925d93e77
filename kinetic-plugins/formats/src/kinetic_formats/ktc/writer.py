"""Writing a .ktc file (docs/FORMAT.md) from a GGUF file: its key/value records copied byte for byte into the three
key/value sections, its tensor table rewritten for the weights section, its tensors copied, each section hashed
as it is written, then the header, manifest and signature; written beside the target and renamed over it, so a
failure leaves nothing half-written."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional

import blake3

from kinetic.contracts import TensorInfo
from kinetic_formats.gguf.reader import key_value_records, open_gguf
from kinetic_formats.ktc.layout import HEADER_SIZE, SECTIONS, SIGNATURE_SIZE, Section, aligned, header, manifest
from kinetic_formats.output import replacing

CHUNK = 64 << 20  # bytes of a tensor copied at a time
Parts = Callable[[], Iterator[bytes]]  # a section's bytes, in pieces


def convert_to_ktc(source: Path, out: Path, secret: Optional[bytes], profile: dict[str, Any]) -> None:
    """Write out from the GGUF file source; secret: a 32-byte Ed25519 key to sign it with; profile: the profile
    section's object."""
    source, out = Path(source), Path(out)
    model = open_gguf(source)
    data = model.data
    records = list(key_value_records(source, data).items())
    tensors = sorted(model.tensors.values(), key=lambda t: t.offset)
    places, weights_length = _places(tensors)
    parts: dict[str, tuple[int, Parts]] = {
        "metadata": _key_values([r for k, r in records if not k.startswith("tokenizer.")]),
        "tokenizer": _key_values([r for k, r in records if k.startswith("tokenizer.") and not _template(k)]),
        "chat_template": _key_values([r for k, r in records if _template(k)]),
        "tensors": _joined([struct.pack("<Q", len(tensors))] + [_tensor_record(t, p) for t, p in zip(tensors, places)]),
        "weights": (weights_length, lambda: _weights(data, tensors, places)),
        "profile": _joined([json.dumps(profile, sort_keys=True, separators=(",", ":")).encode()]),
    }
    with replacing(out) as f:
        _write(f, [(name, *parts[name]) for name in SECTIONS], secret)


def _template(key: str) -> bool:
    return key == "tokenizer.chat_template" or key.startswith("tokenizer.chat_template.")


def _joined(pieces: list[bytes]) -> tuple[int, Parts]:
    return sum(map(len, pieces)), lambda: iter(pieces)


def _key_values(records: list[bytes]) -> tuple[int, Parts]:
    return _joined([struct.pack("<Q", len(records)), *records])


def _places(tensors: list[TensorInfo]) -> tuple[list[int], int]:
    """Each tensor's offset in the weights section (aligned), and the section's length."""
    places, at = [], 0
    for t in tensors:
        places.append(aligned(at))
        at = places[-1] + t.nbytes
    return places, at


def _tensor_record(t: TensorInfo, offset: int) -> bytes:
    name = t.name.encode()
    return struct.pack(f"<Q{len(name)}sI{len(t.shape)}QIQ", len(name), name, len(t.shape), *t.shape, t.type.id, offset)


def _weights(data, tensors: list[TensorInfo], places: list[int]) -> Iterator[bytes]:
    at = 0
    for t, place in zip(tensors, places):
        yield bytes(place - at)
        for start in range(t.offset, t.offset + t.nbytes, CHUNK):
            yield data[start : min(start + CHUNK, t.offset + t.nbytes)].tobytes()
        at = place + t.nbytes


def _write(f: BinaryIO, parts: list[tuple[str, int, Parts]], secret: Optional[bytes]) -> None:
    """The sections at their offsets, hashed as written; then the header, manifest and signature before them."""
    offsets = _offsets([length for _, length, _ in parts], secret is not None)
    sections = []
    for (name, length, pieces), offset in zip(parts, offsets):
        f.seek(offset)
        digest = blake3.blake3()
        for piece in pieces():
            f.write(piece)
            digest.update(piece)
        sections.append(Section(name, offset, length, digest.hexdigest()))
    listed = manifest(sections)
    f.seek(0)
    f.write(header(len(listed), secret is not None, offsets[-1] + parts[-1][1]))
    f.write(listed)
    if secret is not None:
        f.write(_signature(listed, secret))


def _offsets(lengths: Iterable[int], signed: bool) -> list[int]:
    """Where the sections go: the first after the manifest (whose length depends on the offsets it lists, so found
    by iterating until it stops changing), each next at the next multiple of 64."""
    lengths = list(lengths)
    manifest_length = 0
    while True:
        offsets, at = [], HEADER_SIZE + manifest_length + (SIGNATURE_SIZE if signed else 0)
        for length in lengths:
            offsets.append(aligned(at))
            at = offsets[-1] + length
        needed = len(manifest([Section(n, o, l, "0" * 64) for n, o, l in zip(SECTIONS, offsets, lengths)]))
        if needed == manifest_length:
            return offsets
        manifest_length = needed


def _signature(listed: bytes, secret: bytes) -> bytes:
    from nacl.signing import SigningKey

    key = SigningKey(secret)
    return key.verify_key.encode() + key.sign(listed).signature
