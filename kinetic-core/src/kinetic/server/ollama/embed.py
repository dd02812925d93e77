"""Ollama's embedding routes: /api/embed (normalised vectors) and /api/embeddings (its first, one prompt, the
vector as pooled)."""

from __future__ import annotations

import time
from typing import Any

from kinetic.engine.embedding import EUCLIDEAN
from kinetic.server.embeddings import NO_NORM, embeddings, input_prompts
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, read_json
from kinetic.server.ollama.answers import requested_model
from kinetic.server.served import ServedModel


class OllamaEmbed:
    """POST /api/embed: input, a string or a list; normalised vectors."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        started = time.perf_counter_ns()
        fields = Fields(read_json(req))
        name = requested_model(self.served, fields)
        dimensions = fields.integer("dimensions")
        if dimensions is not None and dimensions != self.served.embedder.n_embd:
            raise bad_request(f"{name} gives vectors of {self.served.embedder.n_embd} dimensions and cannot shorten "
                              "them; leave dimensions out", "dimensions")
        prompts = input_prompts(self.served.session.tokenizer, fields.body.get("input"), "input")
        vectors = embeddings(self.served, prompts, EUCLIDEAN)
        resp.media = {"model": name, "embeddings": [vector.tolist() for vector in vectors],
                      "total_duration": time.perf_counter_ns() - started, "load_duration": 0,
                      "prompt_eval_count": sum(len(tokens) for tokens in prompts)}


class OllamaEmbeddings:
    """POST /api/embeddings (Ollama's first embedding route): prompt, one string; the vector as pooled."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        requested_model(self.served, fields)
        prompt = fields.string("prompt")
        if not prompt:
            raise bad_request("prompt must be the text to embed", "prompt")
        [vector] = embeddings(self.served, input_prompts(self.served.session.tokenizer, prompt, "prompt"), NO_NORM)
        resp.media = {"embedding": vector.tolist()}


def ollama_embedding_routes(served: ServedModel) -> dict[str, Any]:
    return {"/api/embed": OllamaEmbed(served), "/api/embeddings": OllamaEmbeddings(served)}
