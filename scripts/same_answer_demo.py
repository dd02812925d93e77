#!/usr/bin/env python3
"""Same input, same output: one seeded chat request, sent again and again to a busy server, hashed each time.

    python scripts/same_answer_demo.py --model MODEL [--runs 10] [-t 2] [-n 160] [--seed 42]
        [--kinetic CMD] [--kinetic-args ARGS] [--llama-server PATH|auto|none] [--llama-args ARGS]
        [--chat-template-file FILE] [--receipt FILE]

As the reference docs' "Same input, same output" describes: kinetic serve --parallel 4, then llama-server
--parallel 4 on the same file (never both at once). While three other clients keep the server busy with
different long requests (each starts its next one when one ends), one chat request at temperature 0.8 with
a fixed seed is sent --runs times, one after the other. Prints, per server, each run's first 40 characters
and the start of the sha256 of its whole answer, then how many distinct answers the runs gave. Kinetic's
answer does not depend on what runs beside it, so it gives one. With --receipt, Kinetic's runs ask for a receipt;
the last one's is saved to FILE and checked with kinetic verify-receipt, which reruns it alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import threading
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import closing
from pathlib import Path

from chat_servers import Answer, add_server_arguments, kinetic_command, servers, stream, timed_chat

SLOTS = 4
QUESTION = "Invent a café on the Moon: give it a name in bold, then describe it in one paragraph."
BUSY = [  # one a busy client
    "Write a long story about a lighthouse keeper who finds a map in a bottle.",
    "List 50 animals, each with one sentence about where it lives.",
    "Explain in detail how a compiler turns source code into machine code, step by step.",
]
BUSY_TOKENS = 1024


def keep_busy(base_url: str, prompt: str, running: threading.Event, stop: threading.Event) -> None:
    """Ask prompt again and again until stop, hanging up on the answer then; running is set at the first
    chunk."""
    body = {"messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": BUSY_TOKENS}
    while not stop.is_set():
        with closing(stream(base_url, body)) as chunks:
            for _ in chunks:
                running.set()
                if stop.is_set():
                    break


def until_running(running: list[threading.Event], clients: list[Future]) -> None:
    """Wait until every busy client is answered; a client's error is raised here."""
    while not all(event.is_set() for event in running):
        done, _ = wait(clients, timeout=0.1, return_when=FIRST_EXCEPTION)
        for client in done:
            client.result()


def answers_while_busy(base_url: str, body: dict, runs: int) -> list[Answer]:
    """The answers to body, asked runs times while len(BUSY) other clients keep the server busy."""
    stop = threading.Event()
    running = [threading.Event() for _ in BUSY]
    with ThreadPoolExecutor(len(BUSY)) as pool:
        clients = [pool.submit(keep_busy, base_url, prompt, event, stop) for prompt, event in zip(BUSY, running)]
        try:
            until_running(running, clients)
            return [timed_chat(base_url, body) for _ in range(runs)]
        finally:
            stop.set()


def answer_table(title: str, answers: list[str]) -> str:
    """The reference docs' table: run, the answer's first 40 characters, the start of its sha256; then the
    number of distinct answers."""
    digests = [hashlib.sha256(answer.encode()).hexdigest()[:16] for answer in answers]
    lines = [title, f"run  {'answer (first 40 characters)':<44}sha256 of the full answer"]
    for run, (answer, digest) in enumerate(zip(answers, digests), start=1):
        start = "".join(" " if c.isspace() else c for c in answer[:40])
        lines.append(f"{run:>3}  {start:<40}    {digest}")
    distinct = len(set(digests))
    lines.append(f"     {distinct} distinct answer{'s' if distinct != 1 else ''} in {len(answers)} runs")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("-n", "--tokens", type=int, default=160, help="most tokens of the repeated answer")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--receipt", type=Path, help="save the receipt of Kinetic's last answer here, and verify it")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    body = {"messages": [{"role": "user", "content": QUESTION}], "temperature": 0.8, "seed": args.seed,
            "max_tokens": args.tokens}
    context = max(args.tokens, BUSY_TOKENS) + 512  # the chat prompt and the answer, per slot
    for server in servers(args, args.model, SLOTS, context):
        receipts = args.receipt is not None and server.name == "Kinetic"
        with server.start() as served:
            answers = answers_while_busy(served.url, {**body, "receipt": True} if receipts else body, args.runs)
        print(answer_table(server.title, [answer.text for answer in answers]) + "\n", flush=True)
        if receipts:
            args.receipt.write_text(json.dumps(answers[-1].receipt, indent=2, ensure_ascii=False) + "\n")
            checked = subprocess.run([*kinetic_command(args.kinetic), "verify-receipt", str(args.receipt)],
                                     capture_output=True, text=True)
            print(f"the last answer's receipt, {args.receipt}:\n{checked.stdout}{checked.stderr}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
