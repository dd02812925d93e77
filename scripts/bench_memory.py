#!/usr/bin/env python3
"""Resident memory of kinetic serve beside llama-server's on the same file: after load and after one request.

    python scripts/bench_memory.py MODEL [-c 4096] [-n 64] [-t 2] [--llama-server PATH|auto|none]
        [--kinetic CMD] [--kinetic-args ARGS] [--llama-args ARGS] [--chat-template-file FILE]

Kinetic then llama-server (never both at once) start on the file with one slot of -c tokens; the script reads
the server's /proc/PID/status once it answers, then sends one greedy chat request for -n tokens and reads it
again. Prints a markdown table: resident memory (VmRSS), its anonymous part (RssAnon: what the process
allocated) and its file part (RssFile: mapped pages of the model and of the libraries), and the peak (VmHWM),
in MB of 10^6 bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from chat_servers import add_server_arguments, servers, timed_chat

FIELDS = ("VmRSS", "RssAnon", "RssFile", "VmHWM")
QUESTION = "Write a short poem about the sea."


def resident(pid: int) -> dict[str, float]:
    """FIELDS of /proc/pid/status, in MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in FIELDS:
            values[name] = int(rest.split()[0]) * 1024 / 1e6  # the kernel writes kB, meaning KiB
    return values


def table(rows: list[tuple[str, str, dict[str, float]]]) -> str:
    lines = ["| server | when | resident MB | anonymous MB | file MB | peak MB |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for server, when, values in rows:
        lines.append(f"| {server} | {when} | " + " | ".join(f"{values[f]:.0f}" for f in FIELDS) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("-c", "--ctx-size", type=int, default=4096, help="context of the one slot")
    parser.add_argument("-n", "--tokens", type=int, default=64, help="tokens the request asks for")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    rows = []
    for server in servers(args, args.model, 1, args.ctx_size):
        with server.start() as served:
            rows.append((server.title, "after load", resident(served.pid)))
            answer = timed_chat(served.url, {"messages": [{"role": "user", "content": QUESTION}],
                                             "temperature": 0, "max_tokens": args.tokens})
            rows.append((server.title, f"after one request ({answer.tokens} tokens)", resident(served.pid)))
    print(table(rows))
    print(f"\n{args.model.name}, -c {args.ctx_size}, {args.threads} threads.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
