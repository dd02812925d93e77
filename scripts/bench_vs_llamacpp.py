#!/usr/bin/env python3
"""Kinetic against llama.cpp on the CPU, as the reference docs' Benchmarks chapter describes.

    python scripts/bench_vs_llamacpp.py MODEL --llama-dir DIR [-t THREADS] [-r 3] [--max-tokens 512]
        [--llama-spec ngram-mod] [--kinetic BIN] [--skip-edit] [--chat-template-file FILE]

Same file, same threads. pp512 and tg128: `kinetic bench --compare DIR/llama-bench` (llama-bench -ngl 0,
flash attention on), best of -r, speculative decoding off on both sides. The edit test: one greedy, streamed
chat request that renames a variable in a short Python file and asks for the whole file back, sent to
`kinetic serve --device cpu` and to llama-server with its own speculative decoding (--spec-type), one server
at a time on 127.0.0.1, a fresh server for each of -r runs (so no run drafts from an earlier answer).
Speed is the answer's tokens after the first over the time from the first to the last token, timed on this
client the same way for both. Prints a markdown table and whether the two edit answers are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from chat_servers import kinetic_command, timed_chat
from make_greedy_golden import free_port, wait_ready

EDIT_FILE = '''import sys
from collections import Counter


def read_words(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().lower().split()


def count_words(words):
    counts = Counter()
    for word in words:
        word = word.strip(".,;:!?\\"'()")
        if word:
            counts[word] += 1
    return counts


def report(counts, limit=10):
    total = sum(counts.values())
    print(f"{total} words, {len(counts)} different")
    for word, n in counts.most_common(limit):
        share = 100.0 * n / total
        print(f"{word:>20} {n:6d} {share:5.1f}%")


if __name__ == "__main__":
    counts = count_words(read_words(sys.argv[1]))
    report(counts)
'''
EDIT_REQUEST = ("Rename the variable `counts` to `tally` everywhere in this file. Answer with the whole file and "
                f"nothing else.\n\n```python\n{EDIT_FILE}```")


def edit_once(port: int, max_tokens: int) -> tuple[float, str]:
    """(tokens after the first per second between the first and the last token, the answer) of one request."""
    body = {"messages": [{"role": "user", "content": EDIT_REQUEST}], "temperature": 0, "max_tokens": max_tokens}
    answer = timed_chat(f"http://127.0.0.1:{port}/v1", body)
    if not answer.tokens or answer.first is None or answer.last == answer.first:
        raise RuntimeError(f"the edit answer on port {port} was too short to time ({answer.tokens} tokens)")
    return answer.tokens_per_second, answer.text


def edit_speed(command: list[str], repetitions: int, max_tokens: int) -> tuple[float, str]:
    """Best edit speed of `repetitions` fresh servers started by command (without --port), and the answer."""
    best, answer = 0.0, ""
    for _ in range(repetitions):
        port = free_port()
        server = subprocess.Popen([*command, "--port", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
        try:
            wait_ready(port, server)
            speed, answer = edit_once(port, max_tokens)
            best = max(best, speed)
        finally:
            server.terminate()
            server.wait()
    return best, answer


def plain_tests(kinetic: list[str], model: Path, llama_dir: Path, threads: int, repetitions: int) -> dict:
    """kinetic bench --compare llama-bench: {test: (Kinetic t/s, llama.cpp t/s)} for pp512 and tg128."""
    command = [*kinetic, "bench", str(model), "--device", "cpu", "-t", str(threads), "-r", str(repetitions),
               "--off", "rad1", "--json", "--compare", str(llama_dir / "llama-bench")]
    report = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    llama = report["llama_cpp"]
    return {"pp512": (report["prefill_tokens_per_second"], llama["pp512"]),
            "tg128": (report["decode_tokens_per_second"], llama["tg128"])}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--llama-dir", type=Path, required=True, help="folder with llama-bench and llama-server")
    parser.add_argument("--kinetic", help="the kinetic binary [default: kinetic on PATH]")
    parser.add_argument("-t", "--threads", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("-r", "--repetitions", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=512, help="limit for the edit answer")
    parser.add_argument("--llama-spec", default="ngram-mod", help="llama-server --spec-type")
    parser.add_argument("--skip-edit", action="store_true", help="only the two plain tests")
    parser.add_argument("--chat-template-file", type=Path,
                        help="Jinja chat template both servers use, for a file without one (Gemma 3 270M: "
                             "llama.cpp's models/templates/google-gemma-2-2b-it.jinja, the same turns)")
    args = parser.parse_args(argv)
    kinetic = kinetic_command(args.kinetic)
    rows = plain_tests(kinetic, args.model, args.llama_dir, args.threads, args.repetitions)
    if not args.skip_edit:
        common = ["-m", str(args.model), "-c", "4096", "-t", str(args.threads), "--host", "127.0.0.1"]
        if args.chat_template_file:
            common += ["--chat-template-file", str(args.chat_template_file)]
        ours, our_text = edit_speed([*kinetic, "serve", *common, "--device", "cpu", "--no-prompt-cache"],
                                    args.repetitions, args.max_tokens)
        theirs, their_text = edit_speed([str(args.llama_dir / "llama-server"), *common, "-np", "1", "--no-webui",
                                         "--spec-type", args.llama_spec], args.repetitions, args.max_tokens)
        rows[f"edit ({args.llama_spec} for llama.cpp)"] = (ours, theirs)
    print("| test | llama.cpp | Kinetic | ratio |\n| --- | ---: | ---: | ---: |")
    for test, (ours, theirs) in rows.items():
        print(f"| {test} | {theirs:.1f} | {ours:.1f} | {ours / theirs:.2f}x |")
    print(f"\n{args.model.name}, {args.threads} threads, best of {args.repetitions}, t/s.")
    if not args.skip_edit:
        print(f"edit answers identical: {'yes' if our_text == their_text else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
