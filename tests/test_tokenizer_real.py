"""The real test models' tokenizers against llama-tokenize's ids (tests/golden/tokenizer, made by
scripts/make_tokenizer_golden.py), decoding back to the text, streaming, and speed."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import pytest

from kinetic.tokenizer import load_tokenizer

GOLDEN = Path(__file__).parent / "golden" / "tokenizer"


@pytest.fixture(scope="module", params=["qwen", "gemma"])
def case(request):
    path = request.getfixturevalue(f"{request.param}_gguf")
    golden = json.loads((GOLDEN / f"{request.param}.json").read_text(encoding="utf-8"))
    assert golden["model"] == path.name
    return load_tokenizer(path), golden["entries"], path


def _written(tokenizer, text: str) -> str:
    """What decoding gives back: SentencePiece reads a literal ▁ as a space."""
    return text.replace("▁", " ") if tokenizer.model == "llama" else text


def test_matches_llama_tokenize(case):
    tokenizer, entries, _ = case
    failures = []
    for entry in entries:
        for key, parse_special in (("special", True), ("plain", False)):
            got = tokenizer.encode(entry["text"], add_special=True, parse_special=parse_special)
            if got != entry[key]:
                failures.append(f"{key} {entry['text'][:60]!r}:\n  got  {got[:40]}\n  want {entry[key][:40]}")
    assert not failures, f"{len(failures)} differ:\n" + "\n".join(failures[:8])


def test_decode_gives_the_text_back(case):
    tokenizer, entries, _ = case
    for entry in entries:
        for key in ("special", "plain"):
            assert tokenizer.decode(entry[key], remove_special=True) == _written(tokenizer, entry["text"]), key


def test_streaming_never_splits_a_character(case):
    tokenizer, entries, _ = case
    for entry in entries:
        ids = tokenizer.encode(entry["text"], add_special=False)
        stream = tokenizer.detokenizer()
        chunks = [stream.feed(token) for token in ids]
        assert "".join(chunks) + stream.finish() == _written(tokenizer, entry["text"])
        assert all("\ufffd" not in chunk for chunk in chunks) or "\ufffd" in entry["text"]


def test_special_ids(case):
    tokenizer, _, _ = case
    if tokenizer.model == "gpt2":
        assert (tokenizer.pre, tokenizer.add_bos) == ("qwen2", False)
        assert (tokenizer.eos_id, tokenizer.eot_id) == (151645, 151645)
        assert tokenizer.token_text(tokenizer.eos_id) == "<|im_end|>"
    else:
        assert (tokenizer.add_bos, tokenizer.bos_id, tokenizer.eos_id, tokenizer.eot_id) == (True, 2, 1, 106)
        assert tokenizer.token_text(tokenizer.eot_id) == "<end_of_turn>"
    assert tokenizer.is_eog(tokenizer.eos_id) and tokenizer.is_eog(tokenizer.eot_id)


def test_twenty_thousand_tokens_in_well_under_a_second(case):
    _, entries, path = case
    tokenizer = load_tokenizer(path)  # nothing cached yet
    words = " ".join(entry["text"] for entry in entries).split(" ")
    rng = random.Random(7)
    # made-up identifiers keep the word cache from doing all the work
    document = " ".join(rng.choice(words) + (f"_{rng.randrange(10**6):x}" if rng.random() < 0.3 else "")
                        for _ in range(12_000))
    start = time.perf_counter()
    ids = tokenizer.encode(document)
    elapsed = time.perf_counter() - start
    assert len(ids) >= 20_000
    assert elapsed < 1.0, f"{len(ids)} tokens took {elapsed:.2f} s"
