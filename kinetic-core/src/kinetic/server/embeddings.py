"""An embedding model's routes: OpenAI's /v1/embeddings and llama-server's /embedding and /embeddings (its
tools/server/server-context.cpp, handle_embeddings_impl); Ollama's are in ollama/embed.py."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from kinetic.engine.embedding import EUCLIDEAN, Embedder
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, read_json
from kinetic.server.llama_prompt import mixed_tokens
from kinetic.server.served import ServedModel

MAX_INPUTS = 256  # texts a request embeds (reference docs, Embeddings)
NO_NORM = -1  # embd_normalize: the pooled vector as it is


def input_prompts(tokenizer, value: Any, field: str) -> list[list[int]]:
    """A string or token ids (one text), or a list of them (several), as llama-server's tokenize_input_prompts
    reads input: each text's tokens, BOS first where the model adds one."""
    several = isinstance(value, list) and not any(isinstance(part, int) for part in value)
    parts = value if several else [value]
    if not parts:
        raise bad_request(f"{field} must not be empty", field)
    if len(parts) > MAX_INPUTS:
        raise bad_request(f"{field} holds {len(parts)} texts; send at most {MAX_INPUTS} per request", field)
    prompts = [mixed_tokens(tokenizer, part, f"{field}[{i}]" if several else field, add_special=True,
                            parse_special=True) for i, part in enumerate(parts)]
    if any(not tokens for tokens in prompts):
        raise bad_request(f"{field} holds an empty text, which has no embedding", field)
    return prompts


def embeddings(served: ServedModel, prompts: list[list[int]], norm: int) -> list[np.ndarray]:
    embedder: Embedder = served.embedder
    return [embedder.embed(tokens, norm) for tokens in prompts]


class OpenAIEmbeddings:
    """POST /v1/embeddings; a body with content instead of input gets llama-server's answer, as there."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        if "input" not in fields.body and "content" in fields.body:
            LlamaEmbeddings(self.served).answer(fields, resp)
            return
        if self.served.embedder.pooling == "none":
            raise bad_request(f"{self.served.name} pools no embeddings (pooling type none): its tokens' vectors "
                              "come from /embedding")
        encoding = fields.string("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise bad_request(f"encoding_format must be float or base64, not {encoding!r}", "encoding_format")
        dimensions, n_embd = fields.integer("dimensions"), self.served.embedder.n_embd
        if dimensions is not None and dimensions != n_embd:
            raise bad_request(f"{self.served.name} gives vectors of {n_embd} dimensions and cannot shorten them; "
                              "leave dimensions out", "dimensions")
        prompts = input_prompts(self.served.session.tokenizer, fields.body.get("input"), "input")
        vectors = embeddings(self.served, prompts, fields.integer("embd_normalize", EUCLIDEAN))
        data = [{"object": "embedding", "index": i, "embedding": _encoded(vector, encoding)}
                for i, vector in enumerate(vectors)]
        used = sum(len(tokens) for tokens in prompts)
        resp.media = {"object": "list", "model": fields.string("model") or self.served.name, "data": data,
                      "usage": {"prompt_tokens": used, "total_tokens": used}}


def _encoded(vector: np.ndarray, encoding: str) -> Any:
    if encoding == "base64":  # little-endian float32, as the OpenAI SDK decodes it
        return base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return vector.tolist()


class LlamaEmbeddings:
    """POST /embedding and /embeddings (llama-server's): content or input; each text's {index, embedding}, the
    embedding a list holding the pooled vector, or with pooling none each token's."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        self.answer(Fields(read_json(req)), resp)

    def answer(self, fields: Fields, resp) -> None:
        field = "input" if "input" in fields.body else "content"
        if field not in fields.body:
            raise bad_request("input or content must be given: the text to embed", "content")
        prompts = input_prompts(self.served.session.tokenizer, fields.body[field], field)
        vectors = embeddings(self.served, prompts, fields.integer("embd_normalize", EUCLIDEAN))
        resp.media = [{"index": i, "embedding": (vector if vector.ndim == 2 else vector[None]).tolist()}
                      for i, vector in enumerate(vectors)]


def embedding_routes(served: ServedModel) -> dict[str, Any]:
    llama = LlamaEmbeddings(served)
    return {"/v1/embeddings": OpenAIEmbeddings(served), "/embedding": llama, "/embeddings": llama}
