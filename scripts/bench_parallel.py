#!/usr/bin/env python3
"""Convoy's gain: N concurrent streamed chat clients on kinetic serve --parallel N, beside llama-server -np N.

    python scripts/bench_parallel.py MODEL [-t 2] [--clients 1,2,4,8] [-n 256] [--llama-server PATH|auto|none]
        [--kinetic CMD] [--kinetic-args ARGS] [--llama-args ARGS]

For each N, Kinetic then llama-server (never both at once) are started on the same file with N slots of
the same context each and -t threads, answer one short request to warm up, then N clients send greedy
chat requests with different prompts at the same moment, each for -n tokens (prompts that write long
answers). Prints a markdown table: aggregate tokens per second (all answers' tokens over the time from the
first request sent to the last token), per-client tokens per second (tokens after the first over the time
from the first to the last, the median client), time to first token (median and worst), and the aggregate
against the same server's with one client.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from chat_servers import Answer, add_server_arguments, servers, timed_chat

PROMPTS = [
    "Write a long story about a lighthouse keeper who finds a map in a bottle.",
    "List 50 animals, each with one sentence about where it lives.",
    "Explain in detail how a compiler turns source code into machine code, step by step.",
    "Write a long letter from a sailor to his family, describing a year at sea.",
    "List 50 famous inventions, each with its inventor and one sentence about why it mattered.",
    "Describe, in many paragraphs, a walk through a city market at dawn.",
    "Write a detailed guide to growing tomatoes, from seed to harvest.",
    "Tell the long history of a small mountain village over five centuries.",
]


def clients(base_url: str, n_clients: int, max_tokens: int) -> tuple[list[Answer], float]:
    """(the answers, the seconds from the first request sent to the last token) of n_clients at once."""
    bodies = [{"messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], "temperature": 0,
               "max_tokens": max_tokens} for i in range(n_clients)]
    with ThreadPoolExecutor(n_clients) as pool:
        start = time.perf_counter()
        answers = list(pool.map(lambda body: timed_chat(base_url, body), bodies))
    return answers, max(answer.last for answer in answers) - start


def row(name: str, n_clients: int, answers: list[Answer], seconds: float) -> dict:
    first_tokens = [answer.first_token_seconds for answer in answers]
    return {"server": name, "clients": n_clients, "aggregate": sum(answer.tokens for answer in answers) / seconds,
            "per_client": statistics.median(answer.tokens_per_second for answer in answers),
            "first_median": statistics.median(first_tokens), "first_worst": max(first_tokens)}


def table(rows: list[dict]) -> str:
    """The markdown table of rows, grouped by server; the last column is the aggregate over the same server's
    with one client (blank without that row)."""
    alone = {r["server"]: r["aggregate"] for r in rows if r["clients"] == 1}
    order = list(dict.fromkeys(r["server"] for r in rows))
    lines = ["| server | clients | aggregate t/s | per client t/s (median) | first token s (median) | "
             "first token s (worst) | aggregate vs 1 client |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted(rows, key=lambda r: (order.index(r["server"]), r["clients"])):
        scaling = f"{r['aggregate'] / alone[r['server']]:.2f}x" if r["server"] in alone else ""
        lines.append(f"| {r['server']} | {r['clients']} | {r['aggregate']:.1f} | {r['per_client']:.1f} "
                     f"| {r['first_median']:.2f} | {r['first_worst']:.2f} | {scaling} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--clients", default="1,2,4,8", help="numbers of concurrent clients, comma-separated")
    parser.add_argument("-n", "--tokens", type=int, default=256, help="tokens each client asks for")
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    context = args.tokens + 512  # the chat prompt and the answer, per slot
    rows = []
    for n_clients in (int(n) for n in args.clients.split(",")):
        for server in servers(args, args.model, n_clients, context):
            with server.start() as served:
                timed_chat(served.url, {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 4})
                answers, seconds = clients(served.url, n_clients, args.tokens)
            rows.append(row(server.name, n_clients, answers, seconds))
            print(f"{server.title}: {sum(a.tokens for a in answers)} tokens in {seconds:.1f} s", file=sys.stderr)
    print(table(rows))
    print(f"\n{args.model.name}, {args.threads} threads, {args.tokens} tokens a client, greedy, streamed.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
