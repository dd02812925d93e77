"""Ollama's API under /api/ (and its heartbeat at /), on every port the server listens on; `kinetic serve
--ollama` listens on Ollama's port, 11434."""

from __future__ import annotations

from typing import Any

from kinetic.server.ollama.answers import Chat, Generate
from kinetic.server.ollama.embed import ollama_embedding_routes
from kinetic.server.ollama.models import Heartbeat, Ps, Show, Tags, Version
from kinetic.server.served import ServedModel
from kinetic.server.unserved import EMBEDDING, TEXT, NotServed

OLLAMA_PORT = 11434


def ollama_routes(served: ServedModel) -> dict[str, Any]:
    routes = {"/": Heartbeat(), "/api/version": Version(), "/api/tags": Tags(served), "/api/ps": Ps(served),
              "/api/show": Show(served)}
    if served.embedder is not None:
        text = NotServed(served, TEXT, "/api/embed")
        return {**routes, "/api/chat": text, "/api/generate": text, **ollama_embedding_routes(served)}
    embeddings = NotServed(served, EMBEDDING, "/api/chat or /api/generate")
    return {**routes, "/api/chat": Chat(served), "/api/generate": Generate(served), "/api/embed": embeddings,
            "/api/embeddings": embeddings}
