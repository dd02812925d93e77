"""A local stand-in for the Hugging Face hub: the two endpoints kinetic pull calls through huggingface_hub
(the model listing with file metadata, and /resolve/ with Range requests), serving repositories held in
memory. It records every request, so tests can see what was fetched and how."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LISTING = re.compile(r"/api/models/(?P<repo>[^/]+/[^/?]+)(?:/revision/[^/?]+)?(?:\?.*)?")
RESOLVE = re.compile(r"/(?P<repo>[^/]+/[^/]+)/resolve/(?P<revision>[^/]+)/(?P<name>[^?]+)")


@dataclass
class Repo:
    files: dict[str, bytes]  # name -> the bytes the listing publishes the hash of
    served: dict[str, bytes] = field(default_factory=dict)  # name -> other bytes sent for it (a corrupt file)
    token: Optional[str] = None  # a gated repository's files need it

    def sibling(self, name: str) -> dict:
        data = self.files[name]
        git_blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        if not name.endswith(".gguf"):  # the hub keeps small text files in git, models in LFS
            return {"rfilename": name, "size": len(data), "blobId": git_blob}
        lfs = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return {"rfilename": name, "size": len(data), "blobId": git_blob, "lfs": lfs}


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: Optional[str]
    authorization: Optional[str]


class FakeHub:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[Request] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler(self))
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def downloads(self) -> list[Request]:
        return [request for request in self.requests if "/resolve/" in request.path]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            hub.requests.append(Request("GET", self.path, self.headers.get("Range"), self.headers.get("Authorization")))
            listing, resolve = LISTING.fullmatch(self.path), RESOLVE.fullmatch(self.path)
            repo = hub.repos.get((listing or resolve)["repo"]) if listing or resolve else None
            if repo is None:  # as the hub answers anonymous requests for a missing (or private) repository
                return self.refuse(401, "RepoNotFound", "Repository not found")
            if listing:
                body = {"id": listing["repo"], "sha": COMMIT, "siblings": [repo.sibling(n) for n in repo.files]}
                return self.send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
            if repo.token and self.headers.get("Authorization") != f"Bearer {repo.token}":
                return self.refuse(401, "GatedRepo", "Access to this model is restricted")
            if resolve["revision"] != COMMIT or resolve["name"] not in repo.files:
                return self.refuse(404, "EntryNotFound", "Entry not found")
            self.file(repo.served.get(resolve["name"], repo.files[resolve["name"]]))

        def file(self, data: bytes) -> None:
            headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes", "X-Repo-Commit": COMMIT,
                       "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}
            asked = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if not asked:
                return self.send(200, data, headers)
            start = int(asked[1])
            self.send(206, data[start:], {**headers, "Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"})

        def refuse(self, status: int, code: str, message: str) -> None:
            self.send(status, json.dumps({"error": message}).encode(),
                      {"Content-Type": "application/json", "X-Error-Code": code, "X-Error-Message": message})

        def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler
