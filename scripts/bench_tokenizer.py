#!/usr/bin/env python3
"""Tokenizer speed: Kinetic's encode beside llama.cpp's llama-tokenize, on a few MB of mixed text.

    python scripts/bench_tokenizer.py [qwen|gemma ...] [--mb 2]

The text is llama.cpp's own source tree: C++ code, Markdown prose and the multilingual tokenizer
test inputs. Prints, per model: load time, a cold and a warm encode (MB/s, tokens/s), a
20,000-token document, the same two texts through llama-tokenize (its model load subtracted), and
whether the ids are identical. llama-tokenize's special-token splitting grows with the square of
the number of pieces, so on Gemma (many whitespace tokens) the big text takes it minutes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kinetic.testing import llama_cpp, real_models
from kinetic.tokenizer import load_tokenizer


def mixed_text(megabytes: float) -> str:
    """Code, prose and many scripts, cycled up to the size asked for."""
    src = llama_cpp.source()
    groups = [sorted((src / "src").glob("*.cpp")), sorted((src / "docs").rglob("*.md")),
              sorted((src / "models").glob("*.inp"))]
    texts = [path.read_text(encoding="utf-8", errors="replace") for group in groups for path in group]
    target = int(megabytes * 1_000_000)
    parts, size, i = [], 0, 0
    while size < target:
        parts.append(texts[i % len(texts)])
        size += len(parts[-1].encode("utf-8"))
        i += 1
    return "".join(parts)


def best_of(runs: int, fn):
    """(seconds of the fastest run, result of the last)."""
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def llama_tokenize_ids(binary: Path, model: Path, text_file: Path) -> list[int]:
    cmd = [str(binary), "-m", str(model), "-f", str(text_file), "--ids", "--log-disable", "--no-escape",
           "--no-parse-special"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def bench(key: str, text: str, binary: Path) -> None:
    model = real_models.fetch(key)
    mb = len(text.encode("utf-8")) / 1e6
    load_s, tokenizer = best_of(1, lambda: load_tokenizer(model))
    cold_s, ids = best_of(1, lambda: tokenizer.encode(text, parse_special=False))
    warm_s, _ = best_of(3, lambda: tokenizer.encode(text, parse_special=False))
    doc = tokenizer.decode(ids[:20_000], remove_special=True)
    fresh = load_tokenizer(model)  # an empty word cache
    doc_s, _ = best_of(1, lambda: fresh.encode(doc))
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: Path(tmp) / f"{name}.txt" for name in ("empty", "doc", "text")}
        for name, content in (("empty", ""), ("doc", doc), ("text", text)):
            files[name].write_bytes(content.encode("utf-8"))
        cpp_load_s, _ = best_of(3, lambda: llama_tokenize_ids(binary, model, files["empty"]))
        cpp_doc_s, _ = best_of(3, lambda: llama_tokenize_ids(binary, model, files["doc"]))
        cpp_s, cpp_ids = best_of(1, lambda: llama_tokenize_ids(binary, model, files["text"]))
    cpp_s, cpp_doc_s = cpp_s - cpp_load_s, cpp_doc_s - cpp_load_s

    def rate(seconds: float) -> str:
        return f"{seconds:7.2f} s {mb / seconds:6.2f} MB/s {len(ids) / seconds:9.0f} tokens/s"

    print(f"{key}: {model.name}, {mb:.2f} MB, {len(ids)} tokens")
    print(f"  load              kinetic {load_s:7.2f} s   llama-tokenize {cpp_load_s:.2f} s")
    print(f"  encode            kinetic, cold cache {rate(cold_s)}")
    print(f"                    kinetic, warm cache {rate(warm_s)}")
    print(f"                    llama-tokenize      {rate(cpp_s)}")
    print(f"  20,000 tokens     kinetic, cold cache {doc_s * 1000:.0f} ms   llama-tokenize {cpp_doc_s * 1000:.0f} ms")
    print(f"  ids identical to llama-tokenize: {'yes' if ids == cpp_ids else 'NO'}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=list(real_models.MODELS))
    parser.add_argument("--mb", type=float, default=2.0, help="size of the text in MB (default 2)")
    args = parser.parse_args(argv)
    binary = llama_cpp.build(("llama-tokenize",)) / "llama-tokenize"
    text = mixed_text(args.mb)
    for key in args.models:
        bench(key, text, binary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
