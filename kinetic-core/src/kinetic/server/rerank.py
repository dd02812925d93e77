"""A reranking model's routes: /v1/rerank, /v1/reranking, /rerank and /reranking, in llama-server's shapes
(tools/server/server-common.cpp, format_response_rerank): Jina's, with documents, or Hugging Face TEI's, with
texts; a document is a string or an object with text."""

from __future__ import annotations

from typing import Any

from kinetic.engine.ranking import Ranker
from kinetic.server.errors import bad_request
from kinetic.server.fields import Fields, json_type, read_json
from kinetic.server.served import ServedModel
from kinetic.server.unserved import RERANK_ROUTES

MAX_DOCUMENTS = 256


def documents_of(fields: Fields) -> tuple[list[str], bool]:
    """The documents' texts, and whether they came as TEI's texts."""
    tei = "texts" in fields.body
    name = "texts" if tei else "documents"
    given = fields.body.get(name)
    if not isinstance(given, list) or not given:
        raise bad_request(f"{name} must be a non-empty list of strings", name)
    if len(given) > MAX_DOCUMENTS:
        raise bad_request(f"{name} holds {len(given)} documents; send at most {MAX_DOCUMENTS} per request", name)
    texts = []
    for i, document in enumerate(given):
        text = document.get("text") if isinstance(document, dict) else document
        if not isinstance(text, str):
            raise bad_request(f"{name}[{i}] must be a string or an object with text, not {json_type(document)}", name)
        texts.append(text)
    return texts, tei


class Rerank:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        query = fields.body.get("query")
        if not isinstance(query, str):
            raise bad_request("query must be a string", "query")
        texts, tei = documents_of(fields)
        top_n = fields.integer("top_n", len(texts), 0)
        ranker: Ranker = self.served.ranker
        prompts = [ranker.prompt(query, text) for text in texts]
        scores = [ranker.score(tokens) for tokens in prompts]
        order = sorted(range(len(texts)), key=lambda i: -scores[i])[:top_n]
        if tei:
            shown = fields.boolean("return_text")
            resp.media = [{"index": i, "score": scores[i], **({"text": texts[i]} if shown else {})} for i in order]
            return
        shown = fields.boolean("return_documents")
        used = sum(len(tokens) for tokens in prompts)
        resp.media = {"model": fields.string("model") or self.served.name, "object": "list",
                      "usage": {"prompt_tokens": used, "total_tokens": used},
                      "results": [{"index": i, "relevance_score": scores[i],
                                   **({"document": {"text": texts[i]}} if shown else {})} for i in order]}


def rerank_routes(served: ServedModel) -> dict[str, Any]:
    rerank = Rerank(served)
    return dict.fromkeys(RERANK_ROUTES, rerank)
