"""make_app(served) -> falcon.App: every route of the server, the guard in front, errors in the OpenAI shape
(Ollama's under /api/)."""

from __future__ import annotations

from typing import Collection, Optional

import falcon

from kinetic.server import anthropic, llamacpp, openai, responses
from kinetic.server.cors import Cors
from kinetic.server.embeddings import embedding_routes
from kinetic.server.errors import add_handlers
from kinetic.server.ollama import ollama_routes
from kinetic.server.prefill import Prefill
from kinetic.server.rerank import rerank_routes
from kinetic.server.security import MAX_OPEN, Guard
from kinetic.server.served import ServedModel
from kinetic.server.unserved import not_served_routes

# Bodies of these must be application/json (the OpenAI routes); llama-server's routes take any type.
JSON_ROUTES = frozenset({"/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/prefill",
                         "/v1/embeddings", "/v1/rerank", "/v1/reranking",
                         "/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/responses",
                         "/v1/responses/input_tokens", "/responses/input_tokens"})


def make_app(served: ServedModel, api_key: Optional[str] = None, max_open: int = MAX_OPEN,
             allowed_hosts: Collection[str] = (), slots_route: bool = True, cors: Cors = Cors()) -> falcon.App:
    """api_key: required on every route but /health; max_open: requests served at once, more get a 503;
    allowed_hosts: without api_key, the Host names answered besides loopback ones (--host, --allowed-hosts);
    slots_route: off, /slots is not served (--no-slots, as llama-server); cors: the browser origins let in."""
    guard = Guard(api_key, JSON_ROUTES, max_open, allowed_hosts, cors)
    app = falcon.App(middleware=[guard, cors], cors_enable=False)
    app.req_options.strip_url_path_trailing_slash = True
    add_handlers(app)
    health = llamacpp.Health(served)
    models = openai.Models(served)
    chat = openai.Completions(served, chat=True)
    llama_completion = llamacpp.Completion(served)
    metrics = llamacpp.Metrics(served)
    routes = {
        "/v1/health": health, "/health": health,
        "/v1/models": models, "/models": models,
        "/v1/chat/completions": chat, "/chat/completions": chat,
        "/v1/completions": openai.Completions(served, chat=False),
        "/v1/prefill": Prefill(served),
        "/v1/messages": anthropic.Messages(served), "/v1/messages/count_tokens": anthropic.CountTokens(served),
        **responses.routes(served),
        "/completion": llama_completion, "/completions": llama_completion,
        "/infill": llamacpp.Infill(served), "/apply-template": llamacpp.ApplyTemplate(served),
        "/tokenize": llamacpp.Tokenize(served), "/detokenize": llamacpp.Detokenize(served),
        "/props": llamacpp.Props(served), **({"/slots": llamacpp.Slots(served)} if slots_route else {}),
        "/metrics": metrics, "/v1/metrics": metrics,
        **not_served_routes(served),
        **(embedding_routes(served) if served.embedder is not None else {}),
        **(rerank_routes(served) if served.ranker is not None else {}),
        **ollama_routes(served),
    }
    for path, resource in routes.items():
        app.add_route(path, resource)
    return app
