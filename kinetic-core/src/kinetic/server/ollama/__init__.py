"""Ollama's API under /api/ (and its heartbeat at /), on every port the server listens on; `kinetic serve
--ollama` listens on Ollama's port, 11434."""

from __future__ import annotations

from typing import Any

from kinetic.server.ollama.answers import Chat, Generate
from kinetic.server.ollama.models import Heartbeat, Ps, Show, Tags, Version
from kinetic.server.served import ServedModel
from kinetic.server.unserved import NotServed

OLLAMA_PORT = 11434


def ollama_routes(served: ServedModel) -> dict[str, Any]:
    embeddings = NotServed(served, "an embedding model", "/api/chat or /api/generate")
    return {"/": Heartbeat(), "/api/version": Version(), "/api/tags": Tags(served), "/api/ps": Ps(served),
            "/api/show": Show(served), "/api/chat": Chat(served), "/api/generate": Generate(served),
            "/api/embed": embeddings, "/api/embeddings": embeddings}
