"""Abuse a running Kinetic server and check that it still answers, correctly.

    python scripts/server_abuse.py -- kinetic serve model.gguf -c 512 --port 8091
    python scripts/server_abuse.py --url http://127.0.0.1:8091        # a server already running
    python scripts/server_abuse.py --quick --url ...                   # the bounded version CI runs
    python scripts/server_abuse.py --long ...                          # also: a stalled client is cut at 30 s

Sends malformed JSON, wrong types, oversized bodies and headers, chunked bodies, an HTTP/2 preface,
bad input to the llama-server routes, a client sending one byte at a time, clients that disconnect
before the body and in the middle of a stream, 100 parallel connections and 8 parallel chats. Each
check prints one line; the exit code is 1 if any failed. Uses only the standard library.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import re
import socket
import subprocess
import sys
import time
from urllib.parse import urlsplit

CHAT = {"messages": [{"role": "user", "content": "Name one river."}], "max_tokens": 4, "temperature": 0}


class Server:
    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80

    def request(self, method: str, path: str, body=None, headers=None, timeout: float = 120):
        """(status, parsed JSON or text) of one request on a fresh connection."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        sent = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, path, body=data, headers={**sent, **(headers or {})})
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode("utf-8", "replace")

    def raw(self, data: bytes, read: bool = True, timeout: float = 10) -> bytes:
        """Send bytes on a socket; what came back before the server closed it or the timeout passed."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as sock:
            sock.sendall(data)
            return _read_all(sock) if read else b""


def _read_all(sock: socket.socket) -> bytes:
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    return got


def status_of(response: bytes) -> int:
    match = re.match(rb"HTTP/1\.[01] (\d{3})", response)
    return int(match.group(1)) if match else 0


def is_error(answer, status: int) -> bool:
    code, body = answer
    return code == status and isinstance(body, dict) and set(body.get("error", {})) >= {"message", "type"}


def is_ollama_error(answer, status: int) -> bool:
    code, body = answer
    return code == status and isinstance(body, dict) and isinstance(body.get("error"), str)


def served_name(server: Server) -> str:
    return server.request("GET", "/api/tags")[1]["models"][0]["name"]


def check_ollama_bodies(server: Server) -> dict[str, bool]:
    post = lambda body, path="/api/chat": server.request("POST", path, body)  # noqa: E731
    chat = {"model": served_name(server), "messages": CHAT["messages"]}
    return {
        "Ollama: malformed JSON is a 400": is_ollama_error(post(b'{"model": '), 400),
        "Ollama: wrong types are a 400": is_ollama_error(post({**chat, "options": {"temperature": "hot"}}), 400),
        "Ollama: messages of the wrong shape are a 400": is_ollama_error(post({**chat, "messages": [5]}), 400),
        "Ollama: an unknown model is a 404": is_ollama_error(post({"model": "no-such", "prompt": "x"},
                                                                  "/api/generate"), 404),
        "Ollama: a bad format is a 400": is_ollama_error(post({**chat, "format": 5}), 400),
    }


def check_bodies(server: Server) -> dict[str, bool]:
    post = lambda body, path="/v1/chat/completions": server.request("POST", path, body)  # noqa: E731
    return {
        "malformed JSON is a 400": is_error(post(b'{"messages": ['), 400),
        "a body that is not an object is a 400": is_error(post(b"[1, 2]"), 400),
        "NaN is not JSON": is_error(post(b'{"messages": [], "temperature": NaN}'), 400),
        "wrong types are a 400": is_error(post({**CHAT, "temperature": "hot"}), 400),
        "messages of the wrong shape are a 400": is_error(post({"messages": [{"content": 5}]}), 400),
        "deeply nested JSON is a 400": is_error(post(b"[" * 100000 + b"]" * 100000), 400),
        "a form body is a 415": server.request("POST", "/v1/chat/completions", b"a=1",
                                               {"Content-Type": "application/x-www-form-urlencoded"})[0] == 415,
        "/tokenize without content is a 400": is_error(post({"content": 5}, "/tokenize"), 400),
        "/detokenize with bad ids is a 400": is_error(post({"tokens": ["a", -1]}, "/detokenize"), 400),
        "/completion with an object prompt is a 400": is_error(post({"prompt": {}}, "/completion"), 400),
    }


def check_wire(server: Server) -> dict[str, bool]:
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {server.host}\r\nContent-Type: application/json\r\n"
    body = json.dumps(CHAT).encode()
    chunked = (head + "Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    chunked += b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
    return {
        "an oversized body is refused": status_of(server.raw(
            (head + "Content-Length: 100000000\r\n\r\n").encode() + b"x" * 65536)) == 413,
        "oversized headers are refused": 400 <= status_of(server.raw(
            (head + "X-Big: " + "a" * 200000 + "\r\nContent-Length: 2\r\n\r\n{}").encode())) < 500,
        "a chunked body is read": status_of(chunked_answer := server.raw(chunked + b"0\r\n\r\n", timeout=120))
        == 200 and b'"choices"' in chunked_answer,
        "an HTTP/2 preface is refused": not 200 <= status_of(server.raw(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")) < 300,
        "a request sent one byte at a time is answered": _byte_at_a_time(server) == 200,
        "a client leaving before its body does no harm": _leave_early(server, head),
    }


def _byte_at_a_time(server: Server) -> int:
    data = f"GET /v1/models HTTP/1.1\r\nHost: {server.host}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection((server.host, server.port), timeout=10) as sock:
        for i in range(len(data)):
            sock.sendall(data[i:i + 1])
            time.sleep(0.002)
        return status_of(_read_all(sock))


def _leave_early(server: Server, head: str) -> bool:
    server.raw((head + "Content-Length: 500\r\n\r\n{\"messages\":").encode(), read=False)
    return server.request("GET", "/v1/models")[0] == 200


def metric(server: Server, name: str) -> int:
    text = server.request("GET", "/metrics")[1]
    return int(float(re.search(rf"^llamacpp:{name} (\S+)$", text, re.M).group(1)))


def predicted(server: Server) -> int:
    return metric(server, "tokens_predicted_total")


def check_disconnect_mid_stream(server: Server) -> dict[str, bool]:
    """A streamed greedy chat whose answer runs past 400 tokens, on the OpenAI route (server-sent events) and
    Ollama's (NDJSON); the client reads three pieces and leaves."""
    long_chat = {"messages": [{"role": "user", "content": "Count from 1 to 300, separated by commas."}],
                 "max_tokens": 400, "temperature": 0, "stream": True}
    ollama = {"model": served_name(server), "messages": long_chat["messages"],
              "options": {"num_predict": 400, "temperature": 0}}
    return {
        "a client leaving mid-stream stops its generation": _leave_mid_stream(
            server, "/v1/chat/completions", long_chat, b"data: "),
        "Ollama: a client leaving mid-stream stops its generation": _leave_mid_stream(
            server, "/api/chat", ollama, b'"done":false'),
    }


def _leave_mid_stream(server: Server, path: str, chat: dict, piece: bytes) -> bool:
    before = predicted(server)
    body = json.dumps(chat).encode()
    request = (f"POST {path} HTTP/1.1\r\nHost: {server.host}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    with socket.create_connection((server.host, server.port), timeout=60) as sock:
        sock.sendall(request)
        got = b""
        while got.count(piece) < 3:
            chunk = sock.recv(4096)
            if not chunk:  # the server ended the answer before three pieces came
                print(f"{path}: the stream ended after {got.count(piece)} pieces: ...{got[-600:]!r}", file=sys.stderr)
                return False
            got += chunk
    return idle(server) and predicted(server) - before < 100


def idle(server: Server, seconds: float = 120) -> bool:
    """Whether the server's requests all end within seconds (an abandoned 400-token answer would run on)."""
    deadline = time.monotonic() + seconds
    while metric(server, "requests_processing") > 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def check_parallel(server: Server, connections: int, chats: int, answer_tokens: int) -> dict[str, bool]:
    chat = {**CHAT, "max_tokens": answer_tokens}
    with concurrent.futures.ThreadPoolExecutor(max_workers=connections) as pool:
        models = list(pool.map(lambda _: _status_or_zero(server, "GET", "/v1/models"), range(connections)))
        answers = list(pool.map(lambda _: server.request("POST", "/v1/chat/completions", chat), range(chats)))
    texts = {a[1]["choices"][0]["message"]["content"] for a in answers if a[0] == 200}
    return {
        f"{connections} parallel connections are answered (200, or 503 past the limit)":
            all(code in (200, 503) for code in models) and 200 in models,
        f"{chats} parallel greedy chats give one answer": all(a[0] == 200 for a in answers) and len(texts) == 1,
    }


def _status_or_zero(server: Server, method: str, path: str) -> int:
    try:
        return server.request(method, path, timeout=60)[0]
    except OSError:
        return 0


def check_stalled(server: Server) -> dict[str, bool]:
    """--long: a client that sends half its headers and stalls is disconnected after about 30 seconds."""
    start = time.monotonic()
    with socket.create_connection((server.host, server.port), timeout=90) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        _read_all(sock)
    waited = time.monotonic() - start
    return {f"a stalled client is cut after 30 s (took {waited:.0f} s)": 29 <= waited <= 45}


def abuse(server: Server, quick: bool, long: bool) -> dict[str, bool]:
    reference = server.request("POST", "/v1/chat/completions", CHAT)
    results = {**check_bodies(server), **check_ollama_bodies(server), **check_wire(server)}
    for _ in range(1 if quick else 5):
        for name, ok in check_disconnect_mid_stream(server).items():
            results[name] = results.get(name, True) and ok
    results.update(check_parallel(server, 100, 8, answer_tokens=4 if quick else 32))
    if long:
        results.update(check_stalled(server))
    after = server.request("POST", "/v1/chat/completions", CHAT)
    results["the server still answers, with the same greedy answer"] = (
        reference[0] == after[0] == 200
        and reference[1]["choices"][0]["message"] == after[1]["choices"][0]["message"])
    return results


def start(command: list[str]) -> tuple[subprocess.Popen, str]:
    """Start `kinetic serve ...` and wait for its start-up line."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.search(r"at (http://\S+)/v1$", line.strip())
    if not match:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, match.group(1)


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", help="a server already running, e.g. http://127.0.0.1:8080")
    parser.add_argument("--quick", action="store_true", help="the bounded version (as CI runs it)")
    parser.add_argument("--long", action="store_true", help="also check that a stalled client is cut at 30 s")
    args = parser.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    if bool(args.url) == bool(command):
        parser.error("give either --url or a server command after --")
    proc, url = start(command) if command else (None, args.url)
    try:
        results = abuse(Server(url), args.quick, args.long)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(30)
    for name, ok in results.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
