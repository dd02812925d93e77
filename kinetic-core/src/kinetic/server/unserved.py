"""Endpoints for another kind of model: a 400 naming what the loaded model is and the routes it serves."""

from __future__ import annotations

from kinetic.server.errors import bad_request
from kinetic.server.served import ServedModel

EMBEDDING_ROUTES = ("/v1/embeddings", "/embeddings", "/embedding")
RERANK_ROUTES = ("/v1/rerank", "/v1/reranking", "/rerank", "/reranking")
# the routes that generate text, which an embedding or reranking model does not serve
GENERATING_ROUTES = ("/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/prefill", "/v1/messages",
                     "/v1/responses", "/responses", "/completion", "/completions", "/infill")
TEXT, EMBEDDING, RERANKING = "a text model", "an embedding model", "a reranking model"
ROUTES = {TEXT: "/v1/chat/completions or /v1/completions", EMBEDDING: "/v1/embeddings", RERANKING: "/v1/rerank"}
OLLAMA_ROUTES = {TEXT: "/api/chat or /api/generate", EMBEDDING: "/api/embed", RERANKING: "/v1/rerank"}


def kind_of(served: ServedModel) -> str:
    return RERANKING if served.ranker is not None else EMBEDDING if served.embedder is not None else TEXT


class NotServed:
    """POST to an endpoint the server knows but the loaded model cannot serve, as the reference docs answer it:
    what the model is, what the endpoint needs, and the routes to use instead."""

    def __init__(self, served: ServedModel, needs: str, ollama: bool = False):
        self.served = served
        self.needs = needs
        self.instead = (OLLAMA_ROUTES if ollama else ROUTES)[kind_of(served)]

    def on_post(self, req, resp):
        raise bad_request(f"{self.served.name} is {kind_of(self.served)} and {req.path} needs {self.needs}; "
                          f"use {self.instead}")


def not_served_routes(served: ServedModel) -> dict[str, NotServed]:
    """The OpenAI and llama-server routes the loaded model's kind does not serve."""
    kind = kind_of(served)
    routes = {TEXT: GENERATING_ROUTES, EMBEDDING: EMBEDDING_ROUTES, RERANKING: RERANK_ROUTES}
    return {path: NotServed(served, needs) for needs, paths in routes.items() if needs != kind for path in paths}
