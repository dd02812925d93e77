"""llama.cpp's tokenizer vectors (models/ggml-vocab-*.gguf with .inp/.out): every supported vocab passes all.

The vectors are what llama.cpp's tests/test-tokenizer-0 checks: each input tokenized without
BOS/EOS and without parsing special tokens. A vocab whose tokenizer or pre-tokenizer Kinetic does
not support must fail to load with the clear error, never be skipped. Last, a few rules the
vectors do not reach, on small made-up vocabularies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from kinetic import open_model
from kinetic.errors import ModelFileError
from kinetic.tokenizer import SUPPORTED_PRE_TOKENIZERS, Tokenizer, TokenType, load_tokenizer

SEPARATOR = b"\n__ggml_vocab_test__\n"

# pre-tokenizers with no vectors in llama.cpp run on the llama-bpe vocab (scripts/make_tokenizer_golden.py)
PRE_GOLDEN = Path(__file__).parent / "golden" / "tokenizer" / "pre_tokenizers.json"
PRE_WITHOUT_VECTORS = sorted(json.loads(PRE_GOLDEN.read_text(encoding="utf-8"))["ids"])
PRE_WITH_VECTORS = {"gpt-2", "llama-bpe", "qwen2", "qwen35", "refact"}

# every vocab file llama.cpp ships: None = supported, else the error loading it must raise
VOCABS = {
    "aquila": None,
    "baichuan": None,
    "bert-bge": None,
    "command-r": 'unsupported pre-tokenizer "command-r"',
    "deepseek-coder": 'unsupported pre-tokenizer "deepseek-coder"',
    "deepseek-llm": 'unsupported pre-tokenizer "deepseek-llm"',
    "falcon": 'unsupported pre-tokenizer "falcon"',
    "gemma-4": 'unsupported tokenizer "gemma4"',
    "gpt-2": None,
    "gpt-neox": None,
    "llama-bpe": None,
    "llama-spm": None,
    "mpt": 'unsupported pre-tokenizer "mpt"',
    "nomic-bert-moe": 'unsupported tokenizer "t5"',
    "phi-3": None,
    "qwen2": None,
    "qwen35": None,
    "refact": None,
    "starcoder": 'unsupported pre-tokenizer "starcoder"',
}


def read_vectors(vocab_file: Path) -> list[tuple[str, list[int]]]:
    """(input, expected ids) pairs, read the way test-tokenizer-0.cpp reads them."""
    raw = vocab_file.with_name(vocab_file.name + ".inp").read_bytes()
    inputs = raw.split(SEPARATOR)
    if raw.endswith(SEPARATOR):
        inputs.pop()
    lines = vocab_file.with_name(vocab_file.name + ".out").read_text(encoding="utf-8").splitlines()
    assert len(inputs) == len(lines), f"{vocab_file.name}: {len(inputs)} inputs, {len(lines)} outputs"
    return [(text.decode("utf-8"), [int(t) for t in line.split()]) for text, line in zip(inputs, lines)]


def test_every_shipped_vocab_is_listed(llama_cpp_source: Path):
    files = (llama_cpp_source / "models").glob("ggml-vocab-*.gguf")
    shipped = {p.name[len("ggml-vocab-") : -len(".gguf")] for p in files}
    assert shipped == set(VOCABS)


@pytest.mark.parametrize("name", sorted(VOCABS))
def test_vocab(llama_cpp_source: Path, name: str):
    vocab_file = llama_cpp_source / "models" / f"ggml-vocab-{name}.gguf"
    error = VOCABS[name]
    if error is not None:
        with pytest.raises(ModelFileError) as caught:
            load_tokenizer(vocab_file)
        assert str(caught.value) == error
        return
    tokenizer = load_tokenizer(vocab_file)
    if not vocab_file.with_name(vocab_file.name + ".inp").exists():
        assert tokenizer.encode("Hello world", add_special=False), "loads, but llama.cpp ships no vectors for it"
        return
    vectors = read_vectors(vocab_file)
    failures = [
        f"{text!r}: got {got}, want {want}"
        for text, want in vectors
        if (got := tokenizer.encode(text, add_special=False, parse_special=False)) != want
    ]
    assert not failures, f"{len(failures)}/{len(vectors)} vectors differ:\n" + "\n".join(failures[:10])


def test_every_supported_pre_tokenizer_is_checked():
    assert set(SUPPORTED_PRE_TOKENIZERS) == set(PRE_WITHOUT_VECTORS) | PRE_WITH_VECTORS


@pytest.fixture(scope="module")
def pre_golden() -> dict:
    return json.loads(PRE_GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def golden_vocab_metadata(llama_cpp_source: Path, pre_golden: dict) -> dict:
    """The vocab's metadata, string arrays read once (each pre-tokenizer builds a tokenizer from it)."""
    metadata = open_model(llama_cpp_source / "models" / pre_golden["vocab"]).metadata
    return {k: list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v for k, v in metadata.items()}


@pytest.mark.parametrize("pre", PRE_WITHOUT_VECTORS)
def test_pre_tokenizer_without_vectors(golden_vocab_metadata: dict, pre_golden: dict, pre: str):
    tokenizer = Tokenizer.from_metadata({**golden_vocab_metadata, "tokenizer.ggml.pre": pre})
    failures = [
        f"{text!r}: got {got}, want {want}"
        for text, want in zip(pre_golden["texts"], pre_golden["ids"][pre])
        if (got := tokenizer.encode(text, parse_special=False)) != want
    ]
    assert not failures, f"{len(failures)} texts differ:\n" + "\n".join(failures[:10])


def small_spm(extra: dict[str, int] | None = None) -> Tokenizer:
    """A SentencePiece vocabulary: control tokens, the 256 byte tokens, and a few pieces (with types)."""
    pieces = {"▁": 1, "a": 1, "b": 1, "c": 1, "d": 1, "▁a": 1, "ab": 1, **(extra or {})}
    texts = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL, *[TokenType.BYTE] * 256, *pieces.values()]
    return Tokenizer.from_metadata({
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": texts,
        "tokenizer.ggml.scores": np.arange(len(texts), dtype=np.float32),
        "tokenizer.ggml.token_type": np.array(types, dtype=np.int32),
    })


def test_special_tokens_are_cut_longest_first_not_leftmost_first():
    tokenizer = small_spm({"ab": TokenType.USER_DEFINED, "bcd": TokenType.USER_DEFINED})
    ab, bcd = tokenizer.vocab.get("ab"), tokenizer.vocab.get("bcd")
    # llama.cpp cuts "bcd" first (longer), so the "ab" that overlaps it is gone
    assert tokenizer.encode("abcd", add_special=False)[-1] == bcd
    assert ab not in tokenizer.encode("abcd", add_special=False)
    assert tokenizer.encode("xab", add_special=False)[-1] == ab


def test_control_tokens_are_read_only_with_parse_special():
    tokenizer = small_spm()
    assert tokenizer.encode("a</s>", parse_special=True) == [1, tokenizer.vocab.get("▁a"), 2]
    assert 2 not in tokenizer.encode("a</s>", parse_special=False)


def test_streaming_holds_back_half_characters_and_loses_nothing():
    tokenizer = small_spm()
    byte_token = {b: tokenizer.vocab.get(f"<0x{b:02X}>") for b in range(256)}
    stream = tokenizer.detokenizer()
    emoji = "🦙".encode("utf-8")
    assert [stream.feed(byte_token[b]) for b in emoji] == ["", "", "", "🦙"]
    assert stream.feed([byte_token[0xF0], byte_token[0x9F]]) == ""
    assert stream.finish() == "\ufffd"  # an unfinished character is not dropped
    assert stream.feed(byte_token[0xFF]) == "\ufffd"  # nor is a byte that can never start one


def test_unsupported_pre_tokenizer_is_named():
    with pytest.raises(ModelFileError, match='^unsupported pre-tokenizer "starcoder2"$'):
        Tokenizer.from_metadata({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "starcoder2",
                                 "tokenizer.ggml.tokens": ["a"], "tokenizer.ggml.merges": []})
    assert {"qwen35", "qwen2", "llama3", "llama-bpe", "gpt-2", "default"} <= set(SUPPORTED_PRE_TOKENIZERS)
