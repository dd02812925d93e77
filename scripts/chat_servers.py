"""Kinetic and llama-server on the same model, one at a time, and streamed chat requests timed on this client.

bench_parallel.py and same_answer_demo.py take their server options from add_server_arguments(), start each
server with the context managers servers() returns (never two at once), and send their requests through
stream() or timed_chat(), from as many threads as they need clients.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, Iterable, Iterator, Optional

from make_greedy_golden import free_port, wait_ready

from kinetic.testing import llama_cpp

STARTED = re.compile(r"Serving .* at (http://\S+/v1)")


@dataclass(frozen=True)
class Answer:
    """One streamed answer, with perf_counter() times taken on this client."""

    text: str
    tokens: int  # completion tokens, as the server's usage counts them
    sent: float
    first: Optional[float]  # when the first piece of text came
    last: Optional[float]  # when the last one came
    receipt: Optional[dict] = None  # Kinetic's receipt, where the request asked for one

    @property
    def first_token_seconds(self) -> float:
        return self.first - self.sent

    @property
    def tokens_per_second(self) -> float:
        """The tokens after the first over the time from the first to the last, as a streaming user sees them."""
        return (self.tokens - 1) / (self.last - self.first) if self.last > self.first else 0.0


def events(lines: Iterable[bytes]) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream's data lines, up to `data: [DONE]`."""
    for line in lines:
        if not line.startswith(b"data: "):
            continue
        data = line[len(b"data: "):].strip()
        if data == b"[DONE]":
            return
        yield json.loads(data)


def stream(base_url: str, body: dict) -> Iterator[dict]:
    """The chunks of one streamed /chat/completions request; closing the iterator early hangs up."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        response = urllib.request.urlopen(request, timeout=3600)
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{base_url}: {error.code} {error.read().decode(errors='replace')}") from None
    with response:
        yield from events(response)


def timed_chat(base_url: str, body: dict) -> Answer:
    """One streamed chat request, read to its end."""
    sent = time.perf_counter()
    first = last = None
    text, tokens, receipt = [], 0, None
    for chunk in stream(base_url, body):
        content = "".join((choice.get("delta") or {}).get("content") or "" for choice in chunk["choices"])
        if content:
            last = time.perf_counter()
            first = first or last
            text.append(content)
        if chunk.get("usage"):
            tokens = chunk["usage"]["completion_tokens"]
        receipt = chunk.get("receipt", receipt)
    return Answer("".join(text), tokens, sent, first, last, receipt)


def kinetic_command(given: Optional[str]) -> list[str]:
    """--kinetic as a command line [default: kinetic on PATH, else this Python's -m kinetic]."""
    if given:
        return shlex.split(given)
    found = shutil.which("kinetic")
    return [found] if found else [sys.executable, "-m", "kinetic"]


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-t", "--threads", type=int, default=2, help="threads, for both servers")
    parser.add_argument("--kinetic", help="the kinetic command [default: kinetic on PATH, else python -m kinetic]")
    parser.add_argument("--kinetic-args", default="", help="more arguments for kinetic serve")
    parser.add_argument("--llama-server", default="auto",
                        help="the llama-server binary; auto builds llama.cpp's (CPU only) once; none runs Kinetic "
                             "alone [default: auto]")
    parser.add_argument("--llama-args", default="", help="more arguments for llama-server (after the script's)")
    parser.add_argument("--chat-template-file", type=Path,
                        help="Jinja chat template both servers use, for a file without one (Gemma 3 270M: "
                             "llama.cpp's models/templates/google-gemma-2-2b-it.jinja, the same turns)")


@dataclass(frozen=True)
class Served:
    """A running server: its /v1 base URL and its process id."""

    url: str
    pid: int


@contextmanager
def _running(command: list[str], started: Callable[[subprocess.Popen], str]) -> Iterator[Served]:
    """The server started by command, at the base URL started(server) gives, stopped at the end; its stderr
    shows only if it does not start."""
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log)
        try:
            try:
                url = started(server)
            except RuntimeError:
                log.seek(0)
                sys.stderr.write(log.read().decode(errors="replace"))
                raise
            yield Served(url, server.pid)
        finally:
            server.terminate()
            server.wait()


def _kinetic_started(server: subprocess.Popen) -> str:
    """The URL of kinetic serve's start-up line; its stdout is drained from then on."""
    line = server.stdout.readline().decode().strip()
    match = STARTED.fullmatch(line)
    if not match:
        raise RuntimeError(f"kinetic serve did not start: {line!r}")
    threading.Thread(target=server.stdout.read, daemon=True).start()
    return match.group(1)


@dataclass(frozen=True)
class Launch:
    """A server to start: start() is a context manager giving it Served, and stopping it at the end."""

    name: str  # Kinetic or llama.cpp
    command: str  # as the tables name it
    start: Callable[[], ContextManager[Served]]

    @property
    def title(self) -> str:
        return f"{self.name}, {self.command}"


def servers(args: argparse.Namespace, model: Path, parallel: int, context: int) -> list[Launch]:
    """Kinetic and llama-server serving model on `parallel` slots of `context` tokens each, to run one after
    the other."""
    template = ["--chat-template-file", str(args.chat_template_file)] if args.chat_template_file else []
    kinetic = [*kinetic_command(args.kinetic), "serve", str(model), "--host", "127.0.0.1", "--port", "0",
               "--parallel", str(parallel), "-t", str(args.threads), "-c", str(context), *template]
    llama = args.llama_server
    if llama == "auto":
        llama = str(llama_cpp.build(("llama-server",)) / "llama-server")

    @contextmanager
    def start_kinetic() -> Iterator[Served]:
        with tempfile.TemporaryDirectory(prefix="kinetic-bench-states-") as states:  # no state from an earlier run
            command = [*kinetic, "--cache-dir", states, *shlex.split(args.kinetic_args)]
            with _running(command, _kinetic_started) as served:
                yield served

    def start_llama() -> ContextManager[Served]:
        port = free_port()
        # llama-server's -c is the whole cache, shared by its slots
        command = [llama, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(parallel),
                   "-t", str(args.threads), "-c", str(parallel * context), "--no-webui", *template,
                   *shlex.split(args.llama_args)]

        def started(server: subprocess.Popen) -> str:
            wait_ready(port, server)
            return f"http://127.0.0.1:{port}/v1"

        return _running(command, started)

    launches = [Launch("Kinetic", f"kinetic serve --parallel {parallel}", start_kinetic),
                Launch("llama.cpp", f"llama-server --parallel {parallel}", start_llama)]
    return launches[:1] if llama == "none" else launches
