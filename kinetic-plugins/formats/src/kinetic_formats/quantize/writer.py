"""Writing a quantized GGUF file as llama-quantize writes it without an importance matrix (llama.cpp's
src/llama-quant.cpp, llama_model_quantize_impl; ggml's gguf.cpp writer): the source's key/values byte for byte but
general.quantization_version and general.file_type (set again, last) and the split keys; the tensors in
llama.cpp's order (those of no layer first, then by layer, each group by name), each the type mixtures.Mixture
gives it; every tensor's data on a 32-byte boundary. Written beside the target and renamed over it (output.replacing)."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from kinetic.contracts import TensorInfo
from kinetic.errors import KineticError
from kinetic.plugins import plugins
from kinetic_formats.gguf.reader import key_value_records, open_gguf
from kinetic_formats.output import replacing
from kinetic_formats.quantize.mixtures import FILE_TYPES, Mixture, n_attention_v

TARGETS = tuple(FILE_TYPES)
ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT: an empty gguf context's, whatever general.alignment says
QUANTIZATION_VERSION = 2  # GGML_QNT_VERSION
DROPPED = ("general.quantization_version", "general.file_type", "split.no", "split.count", "split.tensors.count")
SOURCE_TYPES = ("F32", "F16", "BF16", "Q8_0")  # what a tensor that changes type may be read from, but for F16
U32 = 4  # GGUF value type id
ROWS_AT_ONCE = 4096


def quantize_gguf(source: Path, out: Path, target: str, told: Callable[[int, int, str, str], None]) -> None:
    """Write out, source quantized to target (one of TARGETS); told(i, n, name, type) before each tensor."""
    source, out = Path(source), Path(out)
    model = open_gguf(source)
    records = [record for key, record in key_value_records(source, model.data).items() if key not in DROPPED]
    order = sorted(model.tensors.values(), key=lambda t: (_layer(t.name), t.name))
    names = [t.name for t in order]
    arch = str(model.metadata.get("general.architecture", ""))
    mixture = Mixture(target, arch, int(model.metadata.get(f"{arch}.block_count", 0)),
                      int(model.metadata.get(f"{arch}.expert_count", 0)), n_attention_v(names),
                      "output.weight" not in model.tensors)
    types = [mixture.type_of(t.name, _dims(t.shape), t.type.name) for t in order]
    for t, chosen in zip(order, types):
        if chosen not in (t.type.name, "F16") and t.type.name not in SOURCE_TYPES:
            raise KineticError(f"kinetic quantize reads F32, F16, BF16 or Q8_0 tensors; {t.name} is {t.type.name}")
    records += [_u32_record("general.quantization_version", QUANTIZATION_VERSION),
                _u32_record("general.file_type", FILE_TYPES[target][0])]
    with replacing(out) as f:
        f.write(_header(records, order, types))
        for i, (t, chosen) in enumerate(zip(order, types)):
            told(i, len(order), t.name, chosen)
            for piece in _tensor_bytes(model, t, chosen):
                f.write(piece)
            f.write(bytes(-f.tell() % ALIGNMENT))


def _layer(name: str) -> int:
    """The layer sscanf("blk.%d.") reads from the name; -1 for a tensor of no layer."""
    found = re.match(r"blk\.\s*([+-]?\d+)", name)
    return int(found[1]) if found else -1


def _dims(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape as ggml_n_dims counts it: trailing dimensions of 1 dropped, at least one kept."""
    dims = list(shape)
    while len(dims) > 1 and dims[-1] == 1:
        dims.pop()
    return tuple(dims)


def _u32_record(key: str, value: int) -> bytes:
    raw = key.encode()
    return struct.pack(f"<Q{len(raw)}sII", len(raw), raw, U32, value)


def _header(records: list[bytes], order: list[TensorInfo], types: list[str]) -> bytes:
    """GGUF version 3's header, key/values and tensor table, padded to the data's alignment."""
    kinds = plugins().tensor_types
    parts = [b"GGUF", struct.pack("<IQQ", 3, len(order), len(records)), *records]
    offset = 0
    for t, chosen in zip(order, types):
        dims, name = _dims(t.shape), t.name.encode()
        parts.append(struct.pack(f"<Q{len(name)}sI{len(dims)}QIQ", len(name), name, len(dims), *dims,
                                 kinds[chosen].id, offset))
        offset += -(-kinds[chosen].nbytes(t.n_elements) // ALIGNMENT) * ALIGNMENT
    head = b"".join(parts)
    return head + bytes(-len(head) % ALIGNMENT)


def _tensor_bytes(model, t: TensorInfo, chosen: str) -> Iterator[bytes]:
    """The tensor's data in its chosen type: its own bytes, or its values converted, some rows at a time."""
    raw = model.raw(t.name)
    if chosen == t.type.name:
        yield raw.tobytes()
        return
    kind = plugins().tensor_types[chosen]
    row, rows = t.shape[0], t.n_elements // t.shape[0]
    row_bytes = t.type.nbytes(row)
    for first in range(0, rows, ROWS_AT_ONCE):
        count = min(ROWS_AT_ONCE, rows - first)
        values = t.type.to_float32(raw[first * row_bytes : (first + count) * row_bytes], count * row)
        if chosen == "F16":
            yield values.astype(np.float16).tobytes()
        else:
            yield kind.quantize(values.reshape(-1, kind.block_size)).tobytes()
