"""Endpoints for other kinds of model (embeddings, reranking): a 400 naming what the loaded model serves."""

from __future__ import annotations

from kinetic.server.errors import bad_request
from kinetic.server.served import ServedModel

EMBEDDING_ROUTES = ("/v1/embeddings", "/embeddings", "/embedding")
RERANK_ROUTES = ("/v1/rerank", "/v1/reranking", "/rerank", "/reranking")


class NotServed:
    """POST to an endpoint the server knows but the loaded text model cannot serve, as the reference docs
    answer it; needs says what kind of model the endpoint is for, instead the routes to use."""

    def __init__(self, served: ServedModel, needs: str, instead: str = "/v1/chat/completions or /v1/completions"):
        self.served = served
        self.needs = needs
        self.instead = instead

    def on_post(self, req, resp):
        raise bad_request(f"{self.served.name} is a text model and {req.path} needs {self.needs}; "
                          f"use {self.instead}")


def not_served_routes(served: ServedModel) -> dict[str, NotServed]:
    embeddings = NotServed(served, "an embedding model")
    rerank = NotServed(served, "a reranking model")
    return {**{path: embeddings for path in EMBEDDING_ROUTES}, **{path: rerank for path in RERANK_ROUTES}}
