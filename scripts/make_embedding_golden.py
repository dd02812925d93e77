#!/usr/bin/env python3
"""Write tests/golden/embeddings.json: llama-server's embeddings of a few token-id inputs on random-weight files
of each pooling type, and its rerank scores on a random reranker (pooling rank, a cls.output head and a rerank
template), for tests/test_embeddings.py to compare Kinetic's with (cosine similarity; scores).

    python scripts/make_embedding_golden.py

Each file is written by kinetic.testing.gguf_factory.write_random_model with its <arch>.pooling_type set, and
its sha256 recorded so the test knows it rebuilt the same file. llama-server runs with --embedding and answers
/embedding: each input's pooled vector, normalised (euclidean, its default), or with pooling none each token's.
The inputs are token ids, so no tokenizer stands between the two engines. Builds llama-server once if missing.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from kinetic.testing import llama_cpp
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic.testing.reranker import CROSS_DOCUMENTS, CROSS_QUERY, DOCUMENTS, QUERY, write_cross_encoder, write_reranker
from make_greedy_golden import post, run_server

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "embeddings.json"
# name: (architecture, pooling type (llama.cpp's: 0 none, 1 mean, 2 cls, 3 last), weight type)
FILES = {"qwen3-last": ("qwen3", 3, "F32"), "llama-mean": ("llama", 1, "Q8_0"), "qwen2-cls": ("qwen2", 2, "F16"),
         "bert-cls": ("bert", 2, "F32"), "bert-mean": ("bert", 1, "Q8_0"), "nomic-mean": ("nomic-bert", 1, "Q8_0"),
         "embeddinggemma-mean": ("gemma-embedding", 1, "F16"),
         "gemma3-none": ("gemma3", 0, "F32")}
INPUTS = [[5, 7, 9, 11], list(range(20, 57)), [42]]
SEED = 3


def write(path: Path, arch: str, pooling: int, weight_type: str) -> Path:
    return write_random_model(path, arch, Dims(), weight_type, seed=SEED, metadata={f"{arch}.pooling_type": pooling})


def reranked(tools: Path, model: Path, query: str, documents: list[str]) -> dict:
    answer = run_server(tools, model, lambda port: post(port, "/v1/rerank", {"query": query, "documents": documents}),
                        ("--reranking",))
    scores = {result["index"]: result["relevance_score"] for result in answer["results"]}
    return {"sha256": hashlib.sha256(model.read_bytes()).hexdigest(), "query": query, "documents": documents,
            "scores": [scores[i] for i in range(len(documents))], "prompt_tokens": answer["usage"]["prompt_tokens"]}


def main() -> int:
    tools = llama_cpp.build(("llama-server",))
    files = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (arch, pooling, weight_type) in FILES.items():
            model = write(Path(tmp) / f"{name}.gguf", arch, pooling, weight_type)
            answer = run_server(tools, model, lambda port: post(port, "/embedding", {"content": INPUTS}),
                                ("--embedding",))
            files[name] = {"arch": arch, "pooling": pooling, "weight_type": weight_type,
                           "sha256": hashlib.sha256(model.read_bytes()).hexdigest(),
                           "embeddings": [entry["embedding"] for entry in sorted(answer, key=lambda e: e["index"])]}
        rerank = reranked(tools, write_reranker(Path(tmp) / "reranker.gguf", SEED), QUERY, DOCUMENTS)
        cross = reranked(tools, write_cross_encoder(Path(tmp) / "cross.gguf", SEED), CROSS_QUERY, CROSS_DOCUMENTS)
    golden = {"llama_cpp": llama_cpp.VERSION, "seed": SEED, "inputs": INPUTS, "files": files, "rerank": rerank,
              "cross_encoder": cross}
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
