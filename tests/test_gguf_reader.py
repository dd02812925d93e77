"""The GGUF reader: every value type, zero-copy tensors, and one clear error for every bad file."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from conftest import gguf_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinetic import open_model
from kinetic.errors import ModelFileError
from kinetic.testing.gguf_factory import Dims, write_gguf, write_random_model

METADATA = {
    "test.u8": (7, gguf.GGUFValueType.UINT8), "test.i8": (-7, gguf.GGUFValueType.INT8),
    "test.u16": (65535, gguf.GGUFValueType.UINT16), "test.i16": (-300, gguf.GGUFValueType.INT16),
    "test.u32": (4_000_000_000, gguf.GGUFValueType.UINT32), "test.i32": (-5, gguf.GGUFValueType.INT32),
    "test.u64": (2**63 + 5, gguf.GGUFValueType.UINT64), "test.i64": (-(2**40), gguf.GGUFValueType.INT64),
    "test.f32": (0.5, gguf.GGUFValueType.FLOAT32), "test.f64": (1 / 3, gguf.GGUFValueType.FLOAT64),
    "test.bool": (True, gguf.GGUFValueType.BOOL), "test.str": ("héllo ✓", gguf.GGUFValueType.STRING),
    "test.strings": (["a", "", "ünï", "<|im_end|>"], gguf.GGUFValueType.ARRAY),
    "test.ints": ([1, 2, 3], gguf.GGUFValueType.ARRAY),
    "test.floats": ([0.25, -1.5], gguf.GGUFValueType.ARRAY),
    "test.nested": ([[1, 2], [3]], gguf.GGUFValueType.ARRAY),
    "test.nested_strings": ([["x", "y"], ["z"]], gguf.GGUFValueType.ARRAY),
}


@pytest.fixture(scope="module")
def every_type_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "every-type.gguf"
    writer = gguf.GGUFWriter(str(path), "test")
    writer.add_uint32("general.alignment", 64)
    for key, (value, value_type) in METADATA.items():
        writer.add_key_value(key, value, value_type)
    writer.add_tensor("a", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.add_tensor("b", np.full(5, 2.0, dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def plain(value):
    """A metadata value as plain Python, for comparison."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)) or type(value).__name__ == "StringArray":
        return [plain(v) for v in value]
    return value


def test_every_metadata_value_type(every_type_file):
    model = open_model(every_type_file)
    assert (model.format, model.version, model.architecture) == ("gguf", 3, "test")
    for key, (value, _) in METADATA.items():
        assert plain(model.metadata[key]) == pytest.approx(value) if isinstance(value, float) else plain(
            model.metadata[key]) == value, key


def test_tensors_are_aligned_and_zero_copy(every_type_file):
    model = open_model(every_type_file)
    a, b = model.tensors["a"], model.tensors["b"]
    assert (a.type.name, a.shape, b.type.name, b.shape) == ("F32", (4, 3), "F16", (5,))
    assert a.offset % 64 == 0 and b.offset % 64 == 0
    assert np.shares_memory(model.raw("a"), model.data)
    np.testing.assert_array_equal(model.to_float32("a"), np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(model.to_float32("b"), np.full(5, 2.0, dtype=np.float32))


def test_version_2_reads(every_type_file, tmp_path):
    data = bytearray(every_type_file.read_bytes())
    data[4:8] = struct.pack("<I", 2)
    (tmp_path / "v2.gguf").write_bytes(data)
    assert open_model(tmp_path / "v2.gguf").version == 2


def test_real_models_open(real_gguf):
    model = open_model(real_gguf)
    oracle = gguf_oracle(real_gguf)
    assert len(model.tensors) == len(oracle.tensors)
    for tensor in oracle.tensors:
        ours = model.tensors[tensor.name]
        assert (ours.type.id, ours.shape, ours.offset, ours.nbytes) == (
            int(tensor.tensor_type), tuple(int(d) for d in tensor.shape), int(tensor.data_offset), int(tensor.n_bytes))
    assert len(model.metadata["tokenizer.ggml.tokens"]) == len(oracle.fields["tokenizer.ggml.tokens"].data)


# --- bad files: each gives one ModelFileError with a clear message ---

@pytest.fixture(scope="module")
def small_model(tmp_path_factory) -> Path:
    return write_random_model(tmp_path_factory.mktemp("small") / "small.gguf", "llama", Dims(n_vocab=288),
                              weight_type="Q8_0")


def patched(source: Path, tmp_path: Path, offset: int, new: bytes, name: str = "bad.gguf") -> Path:
    data = bytearray(source.read_bytes())
    data[offset : offset + len(new)] = new
    (tmp_path / name).write_bytes(data)
    return tmp_path / name


def error_of(path: Path) -> str:
    with pytest.raises(ModelFileError) as caught:
        open_model(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def tensor_field(path: Path, index: int):
    return gguf.GGUFReader(path).tensors[index].field


@pytest.mark.parametrize("head, expected", [
    (b"GGML" + struct.pack("<I", 3), "not a GGUF file (it starts with b'GGML'"),
    (b"GGUF" + struct.pack("<I", 1), "GGUF version 1 is not supported (versions 2 and 3 are)"),
    (b"GGUF" + struct.pack("<I", 4), "GGUF version 4 is not supported"),
    (b"GGUF" + struct.pack(">I", 3), "big-endian GGUF files are not supported"),
])
def test_bad_preamble(small_model, tmp_path, head, expected):
    assert expected in error_of(patched(small_model, tmp_path, 0, head))


def test_absurd_counts_do_not_allocate(small_model, tmp_path):
    assert "metadata count 4611686018427387904 does not fit" in error_of(
        patched(small_model, tmp_path, 16, struct.pack("<Q", 2**62)))
    assert "tensor count 4611686018427387904 does not fit" in error_of(
        patched(small_model, tmp_path, 8, struct.pack("<Q", 2**62)))
    tokens = gguf.GGUFReader(small_model).fields["tokenizer.ggml.tokens"]
    count_at = tokens.offset + 8 + len("tokenizer.ggml.tokens") + 4 + 4
    assert "array count 4611686018427387904 does not fit" in error_of(
        patched(small_model, tmp_path, count_at, struct.pack("<Q", 2**62)))


def test_unknown_weight_type(small_model, tmp_path):
    field = tensor_field(small_model, 0)
    type_at = field.offset + sum(p.nbytes for p in field.parts[:-2])
    assert "tensor 'token_embd.weight' has unknown weight type id 99" in error_of(
        patched(small_model, tmp_path, type_at, struct.pack("<I", 99)))


def test_overlapping_tensors(small_model, tmp_path):
    first, second = tensor_field(small_model, 0), tensor_field(small_model, 1)
    second_offset_at = second.offset + sum(p.nbytes for p in second.parts[:-1])
    first_offset = first.parts[-1].tobytes()
    assert "overlap" in error_of(patched(small_model, tmp_path, second_offset_at, first_offset))


def test_tensor_past_the_end(small_model, tmp_path):
    data = small_model.read_bytes()
    (tmp_path / "cut.gguf").write_bytes(data[:-100])
    assert "reaches past the end of the file (truncated?)" in error_of(tmp_path / "cut.gguf")


def test_missing_empty_and_folder(tmp_path):
    assert "no such file; check the path" in error_of(tmp_path / "nope.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    assert "empty" in error_of(tmp_path / "empty.gguf")
    (tmp_path / "dir.gguf").mkdir()
    assert "is a folder" in error_of(tmp_path / "dir.gguf")


def test_split_files_are_refused(small_model, tmp_path):
    part = tmp_path / "model-00001-of-00003.gguf"
    part.write_bytes(small_model.read_bytes())
    assert error_of(part) == (
        "model-00001-of-00003.gguf is one part of a split model; split files are not read yet. "
        "Join them first with llama.cpp's llama-gguf-split --merge model-00001-of-00003.gguf model.gguf")
    by_metadata = write_gguf(tmp_path / "shard.gguf", "llama", {"split.count": 2}, {})
    assert "is one part of a split model" in error_of(by_metadata)
    whole = tmp_path / "model-00001-of-00001.gguf"
    whole.write_bytes(small_model.read_bytes())
    assert open_model(whole).architecture == "llama"


def section_boundaries(path: Path) -> list[int]:
    """Where each section of the header starts and ends, by gguf-py's reading of the file."""
    reader = gguf.GGUFReader(path)
    points = {4, 8, 16, 24, reader.data_offset}
    points |= {field.offset for field in reader.fields.values()}
    points |= {tensor.field.offset for tensor in reader.tensors}
    tensors = sorted(reader.tensors, key=lambda t: t.data_offset)
    points |= {int(t.data_offset) + int(t.n_bytes) for t in tensors[:3] + tensors[-3:]}
    return sorted(p for p in points if 0 < p < path.stat().st_size)


def test_truncated_at_every_section_boundary(small_model, tmp_path):
    data = small_model.read_bytes()
    for cut in section_boundaries(small_model):
        for size in (cut - 1, cut):
            (tmp_path / "cut.gguf").write_bytes(data[:size])
            message = error_of(tmp_path / "cut.gguf")
            assert "truncated" in message, (size, message)


def test_real_model_truncated_at_every_section_boundary(gemma_gguf, tmp_path):
    """The real file cut at and just before every metadata entry, tensor-table entries and the data."""
    reader = gguf_oracle(gemma_gguf)
    infos = reader.tensors
    cuts = [field.offset for field in reader.fields.values()]
    cuts += [infos[i].field.offset for i in (0, 1, len(infos) // 2, len(infos) - 1)]
    cuts += [reader.data_offset, int(infos[0].data_offset) + int(infos[0].n_bytes)]
    with open(gemma_gguf, "rb") as f:
        header = f.read(max(cuts) + 1)
    cut = tmp_path / "cut.gguf"
    for size in sorted({c for point in cuts for c in (point - 1, point) if c > 0}):
        cut.write_bytes(header[:size])
        assert "truncated" in error_of(cut), size
    with open(cut, "r+b") as f:  # sparse: the whole header, the data region one byte short
        f.truncate(gemma_gguf.stat().st_size - 1)
    assert "reaches past the end of the file" in error_of(cut)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 2**32), st.integers(0, 255)), min_size=1, max_size=8))
def test_random_byte_flips_give_only_our_errors(small_model, tmp_path, flips):
    """Bytes flipped in the header (all the reader reads): a model or a ModelFileError, nothing else."""
    data = bytearray(small_model.read_bytes())
    header_size = open_model(small_model).tensors["token_embd.weight"].offset
    for position, value in flips:
        data[position % header_size] = value
    (tmp_path / "flipped.gguf").write_bytes(data)
    try:
        model = open_model(tmp_path / "flipped.gguf")
    except ModelFileError as error:
        assert "\n" not in str(error)
    else:
        assert model.format == "gguf"
