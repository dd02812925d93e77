#!/usr/bin/env python3
"""Zero Wait: the time from Enter to the first token of the answer to a pasted 2,000-token document and a
short question, with the message run ahead while it was written (/v1/prefill, as kinetic chat does after
each edit) and without.

    python scripts/bench_zero_wait.py MODEL [-t THREADS] [-r REPEATS] [--chat-template-file FILE]

Each run starts its own kinetic serve (a fresh state folder: nothing warm from an earlier run); best of -r.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path

from chat_servers import add_server_arguments, servers, timed_chat

from kinetic.testing import real_models

QUESTION = "Which section says the river rose the most, and by how much?"


def document(run: int) -> str:
    """About 2,000 tokens, different in every run."""
    return "Field report.\n" + "\n".join(f"Section {i}: on day {i + run} the river rose {(i * 7) % 23} cm at gauge "
                                         f"{i % 9}, and the banks held." for i in range(80))


def prefill(base_url: str, text: str) -> int:
    body = json.dumps({"messages": [{"role": "user", "content": text}]}).encode()
    request = urllib.request.Request(f"{base_url}/prefill", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)["cached_tokens"]


def enter_to_first_token(base_url: str, message: str, ahead: bool) -> tuple[float, int]:
    """Seconds from the request to its first token, and the tokens run ahead before it."""
    cached = 0
    if ahead:  # the paste arrives in pieces, then the question is typed word by word
        for end in [*range(len(message) // 8, len(message) - len(QUESTION), len(message) // 8), len(message)]:
            cached = prefill(base_url, message[:end])
    answer = timed_chat(base_url, {"messages": [{"role": "user", "content": message}], "max_tokens": 8,
                                   "temperature": 0})
    return answer.first_token_seconds, cached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a .gguf file, or qwen / gemma for the test models")
    parser.add_argument("-r", "--repeats", type=int, default=3)
    add_server_arguments(parser)
    args = parser.parse_args()
    model = Path(args.model) if args.model not in ("qwen", "gemma") else real_models.fetch(args.model)
    kinetic = servers(args, model, parallel=1, context=4096)[0]
    print(f"{model.name}, {args.threads} threads, kinetic serve --parallel 1; best of {args.repeats}")
    for ahead in (False, True):
        best, ran = float("inf"), 0
        for run in range(args.repeats):
            with kinetic.start() as url:
                seconds, ran = enter_to_first_token(url, f"{document(run)}\n\n{QUESTION}", ahead)
            best = min(best, seconds)
        label = f"with Zero Wait ({ran} tokens run ahead)" if ahead else "without Zero Wait"
        print(f"{label}: {best:.2f} s from Enter to the first token")
    return 0


if __name__ == "__main__":
    sys.exit(main())
