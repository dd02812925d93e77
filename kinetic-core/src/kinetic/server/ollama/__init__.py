"""Ollama's API under /api/ (and its heartbeat at /), on every port the server listens on; `kinetic serve
--ollama` listens on Ollama's port, 11434."""

from __future__ import annotations

from typing import Any

from kinetic.server.ollama.answers import Chat, Generate
from kinetic.server.ollama.embed import ollama_embedding_routes
from kinetic.server.ollama.models import Heartbeat, Ps, Show, Tags, Version
from kinetic.server.served import ServedModel
from kinetic.server.unserved import EMBEDDING, TEXT, NotServed, kind_of

OLLAMA_PORT = 11434


def ollama_routes(served: ServedModel) -> dict[str, Any]:
    routes = {"/": Heartbeat(), "/api/version": Version(), "/api/tags": Tags(served), "/api/ps": Ps(served),
              "/api/show": Show(served)}
    text, embeddings = NotServed(served, TEXT, ollama=True), NotServed(served, EMBEDDING, ollama=True)
    generating = {"/api/chat": Chat(served), "/api/generate": Generate(served)} if kind_of(served) == TEXT else \
        {"/api/chat": text, "/api/generate": text}
    embedding = ollama_embedding_routes(served) if kind_of(served) == EMBEDDING else \
        {"/api/embed": embeddings, "/api/embeddings": embeddings}
    return {**routes, **generating, **embedding}
