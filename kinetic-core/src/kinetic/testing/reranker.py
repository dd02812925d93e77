"""A random-weight reranker file, as llama.cpp's converter writes Qwen3-Reranker: a qwen3 decoder with pooling
type rank, a cls.output head of two rows (yes, no) and a rerank template; scripts/make_embedding_golden.py has
llama-server score it, tests/test_embeddings.py has Kinetic score the same file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kinetic.testing.gguf_factory import Dims, write_random_model

ARCHITECTURE = "qwen3"  # whose head's two outputs llama.cpp turns into probabilities
TEMPLATE = "<query>{query}</query> <document>{document}</document>"
QUERY, DOCUMENTS = "tok5 tok7", ["tok5 tok7 tok9", "tok100", "tok7 tok5", "tok42 tok43 tok44 tok45"]


def write_reranker(path: Path, seed: int = 3) -> Path:
    head = np.random.default_rng(seed).standard_normal((2, Dims().n_embd)).astype(np.float32)  # [yes, no] rows
    return write_random_model(path, ARCHITECTURE, Dims(), "F32", seed=seed, extra_tensors={"cls.output.weight": head},
                              metadata={f"{ARCHITECTURE}.pooling_type": 4,
                                        f"{ARCHITECTURE}.classifier.output_labels": ["yes", "no"],
                                        "tokenizer.chat_template.rerank": TEMPLATE})
