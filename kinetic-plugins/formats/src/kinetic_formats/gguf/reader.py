"""The GGUF reader: a memory-mapped, zero-copy view of metadata and tensors, versions 2 and 3.

Layout (ggml's docs/gguf.md): magic "GGUF", u32 version, u64 tensor count, u64 metadata count,
the metadata key/values, the tensor infos, padding to general.alignment, then the tensor data.
"""

from __future__ import annotations

import math
import mmap
import struct
from pathlib import Path
from typing import Any, Mapping, Optional

import numpy as np

from kinetic.contracts import ModelFile, TensorInfo, TensorType
from kinetic.errors import ModelFileError, file_error
from kinetic_formats.gguf import split
from kinetic_formats.gguf.cursor import Cursor
from kinetic_formats.gguf.values import read_value

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
_MIN_KV_SIZE = 8 + 4 + 1  # key length, value type, smallest value
_MIN_TENSOR_INFO_SIZE = 8 + 4 + 4 + 8  # name length, n_dims, type, offset


def is_gguf(head: bytes) -> bool:
    return head[:4] == MAGIC


def open_gguf(path: Path) -> ModelFile:
    """Open a GGUF file; any fault in it is one ModelFileError naming the file."""
    path = Path(path)
    split.check_name(path)
    data = map_file(path)
    cur = Cursor(memoryview(data), path.name)
    version, n_tensors, n_kv = read_preamble(cur)
    metadata = read_metadata(cur, n_kv)
    split.check_metadata(path, metadata)
    alignment = read_alignment(cur, metadata)
    infos = read_tensor_infos(cur, n_tensors, tensor_types())
    data_start = -(-cur.pos // alignment) * alignment
    tensors = place_tensors(cur, infos, data_start, alignment)
    return ModelFile(path=path, format="gguf", version=version, metadata=metadata, tensors=tensors, data=data)


def map_file(path: Path) -> np.ndarray:
    """The whole file as a read-only uint8 array backed by a memory map."""
    try:
        with open(path, "rb") as f:
            if path.stat().st_size == 0:
                raise ModelFileError(f"{path.name}: the file is empty")
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as error:
        raise file_error(path, error) from None
    return np.frombuffer(mapped, dtype=np.uint8)


def read_preamble(cur: Cursor) -> tuple[int, int, int]:
    magic = bytes(cur.buf[:4])
    if len(magic) < 4 and MAGIC.startswith(magic):
        raise cur.truncated()
    if magic != MAGIC:
        raise cur.fail(f"not a GGUF file (it starts with {magic!r}, not b'GGUF')")
    cur.pos = 4
    version = cur.u32()
    if version not in VERSIONS:
        if version & 0xFFFF == 0 and (version >> 24) in VERSIONS:
            raise cur.fail("big-endian GGUF files are not supported")
        raise cur.fail(f"GGUF version {version} is not supported (versions 2 and 3 are)")
    n_tensors = cur.u64()
    n_kv = cur.u64()
    return version, n_tensors, n_kv


def read_metadata(cur: Cursor, n_kv: int, spans: Optional[dict[str, tuple[int, int]]] = None) -> dict[str, Any]:
    """The n_kv key/values at cur; spans, if given, gets each record's [start, end) in cur.buf by key."""
    cur.section = "the metadata"
    if n_kv * _MIN_KV_SIZE > cur.remaining:
        raise cur.fail(f"metadata count {n_kv} does not fit in the file (corrupt or truncated)")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        start = cur.pos
        key = cur.string()
        cur.section = f"metadata value {key!r}"
        if key in metadata:
            raise cur.fail(f"metadata key {key!r} appears twice")
        metadata[key] = read_value(cur, cur.u32())
        if spans is not None:
            spans[key] = (start, cur.pos)
        cur.section = "the metadata"
    return metadata


def key_value_records(path: Path, data: np.ndarray) -> dict[str, bytes]:
    """Each key/value record of a GGUF file (data: its bytes) as it is stored, by key, in file order."""
    cur = Cursor(memoryview(data), path.name)
    _, _, n_kv = read_preamble(cur)
    spans: dict[str, tuple[int, int]] = {}
    read_metadata(cur, n_kv, spans)
    return {key: bytes(data[start:end]) for key, (start, end) in spans.items()}


def read_alignment(cur: Cursor, metadata: Mapping[str, Any]) -> int:
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 or alignment & (alignment - 1):
        raise cur.fail(f"general.alignment {alignment!r} is not a power of two")
    return alignment


def tensor_types() -> Mapping[int, TensorType]:
    from kinetic.plugins import plugins

    return {t.id: t for t in plugins().tensor_types}


_DIMS = [struct.Struct(f"<{n}Q") for n in range(MAX_DIMS + 1)]
_TYPE_OFFSET = struct.Struct("<IQ")


def read_tensor_infos(cur: Cursor, n_tensors: int, types: Mapping[int, TensorType]) -> list[tuple]:
    """(name, type, shape, relative offset) of each tensor, each checked on its own."""
    cur.section = "the tensor table"
    if n_tensors * _MIN_TENSOR_INFO_SIZE > cur.remaining:
        raise cur.fail(f"tensor count {n_tensors} does not fit in the file (corrupt or truncated)")
    infos, names = [], set()
    for _ in range(n_tensors):
        name = cur.string()
        if name in names:
            raise cur.fail(f"tensor {name!r} appears twice")
        names.add(name)
        n_dims = cur.u32()
        if n_dims > MAX_DIMS:
            raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})")
        shape = cur.unpack(_DIMS[n_dims])
        type_id, offset = cur.unpack(_TYPE_OFFSET)
        tensor_type = types.get(type_id)
        if tensor_type is None:
            raise cur.fail(f"tensor {name!r} has unknown weight type id {type_id}")
        if shape and shape[0] % tensor_type.block_size:
            raise cur.fail(
                f"tensor {name!r}: rows of {shape[0]} are not whole {tensor_type.name} blocks of {tensor_type.block_size}"
            )
        infos.append((name, tensor_type, shape, offset))
    return infos


def place_tensors(cur: Cursor, infos: list[tuple], data_start: int, alignment: int) -> dict[str, TensorInfo]:
    """Check each tensor lies inside the file, aligned, overlapping no other."""
    file_size = len(cur.buf)
    tensors: dict[str, TensorInfo] = {}
    for name, tensor_type, shape, offset in infos:
        if offset % alignment:
            raise cur.fail(f"tensor {name!r} is not aligned to {alignment} bytes")
        n_elements = math.prod(shape)
        info = TensorInfo(name, tensor_type, tuple(shape), data_start + offset, tensor_type.nbytes(n_elements))
        if info.offset + info.nbytes > file_size:
            raise cur.fail(f"tensor {name!r} reaches past the end of the file (truncated?)")
        tensors[name] = info
    ordered = sorted(tensors.values(), key=lambda t: t.offset)
    for first, second in zip(ordered, ordered[1:]):
        if first.offset + first.nbytes > second.offset:
            raise cur.fail(f"tensors {first.name!r} and {second.name!r} overlap")
    return tensors
