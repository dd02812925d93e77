"""Endpoints for another kind of model: a 400 naming what the loaded model is and the routes it serves."""

from __future__ import annotations

from typing import Any

from kinetic.server.errors import bad_request
from kinetic.server.served import ServedModel

EMBEDDING_ROUTES = ("/v1/embeddings", "/embeddings", "/embedding")
RERANK_ROUTES = ("/v1/rerank", "/v1/reranking", "/rerank", "/reranking")
# the routes that generate text, which an embedding model does not serve
GENERATING_ROUTES = ("/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/prefill", "/v1/messages",
                     "/v1/responses", "/responses", "/completion", "/completions", "/infill")
TEXT, EMBEDDING = "a text model", "an embedding model"


class NotServed:
    """POST to an endpoint the server knows but the loaded model cannot serve, as the reference docs answer it:
    what the model is, what the endpoint needs, and the routes to use instead."""

    def __init__(self, served: ServedModel, needs: str, instead: str):
        self.served = served
        self.needs = needs
        self.instead = instead

    def on_post(self, req, resp):
        kind = EMBEDDING if self.served.embedder is not None else TEXT
        raise bad_request(f"{self.served.name} is {kind} and {req.path} needs {self.needs}; use {self.instead}")


def not_served_routes(served: ServedModel) -> dict[str, NotServed]:
    """The OpenAI and llama-server routes the loaded model's kind does not serve."""
    rerank = NotServed(served, "a reranking model", served_routes(served))
    routes: dict[str, Any] = {path: rerank for path in RERANK_ROUTES}
    if served.embedder is None:
        return {**routes, **dict.fromkeys(EMBEDDING_ROUTES, NotServed(served, EMBEDDING, served_routes(served)))}
    return {**routes, **dict.fromkeys(GENERATING_ROUTES, NotServed(served, TEXT, served_routes(served)))}


def served_routes(served: ServedModel) -> str:
    return "/v1/embeddings" if served.embedder is not None else "/v1/chat/completions or /v1/completions"
