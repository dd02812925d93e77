"""Random-weight reranker files, as llama.cpp's converter writes Qwen3-Reranker (a qwen3 decoder with pooling type
rank, a cls.output head of two rows (yes, no) and a rerank template) and a BERT-style cross-encoder (a bert
encoder with pooling type rank, a dense cls layer and a cls.output head of one row); scripts/make_embedding_golden.py
has llama-server score them, tests/test_embeddings.py has Kinetic score the same files."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kinetic.testing.gguf_factory import Dims, write_random_model

ARCHITECTURE = "qwen3"  # whose head's two outputs llama.cpp turns into probabilities
TEMPLATE = "<query>{query}</query> <document>{document}</document>"
QUERY, DOCUMENTS = "tok5 tok7", ["tok5 tok7 tok9", "tok100", "tok7 tok5", "tok42 tok43 tok44 tok45"]


CROSS_QUERY, CROSS_DOCUMENTS = "a b", ["a b c", "z", "b a", "x y z w"]  # words of the factory's WordPiece vocab


def write_cross_encoder(path: Path, seed: int = 3) -> Path:
    rng, d = np.random.default_rng(seed), Dims()
    head = {"cls.weight": rng.standard_normal((d.n_embd, d.n_embd)).astype(np.float32) * 0.1,
            "cls.bias": rng.standard_normal(d.n_embd).astype(np.float32) * 0.1,
            "cls.output.weight": rng.standard_normal((1, d.n_embd)).astype(np.float32),
            "cls.output.bias": rng.standard_normal(1).astype(np.float32)}
    return write_random_model(path, "bert", d, "F32", seed=seed, extra_tensors=head,
                              metadata={"bert.pooling_type": 4})


def write_reranker(path: Path, seed: int = 3) -> Path:
    head = np.random.default_rng(seed).standard_normal((2, Dims().n_embd)).astype(np.float32)  # [yes, no] rows
    return write_random_model(path, ARCHITECTURE, Dims(), "F32", seed=seed, extra_tensors={"cls.output.weight": head},
                              metadata={f"{ARCHITECTURE}.pooling_type": 4,
                                        f"{ARCHITECTURE}.classifier.output_labels": ["yes", "no"],
                                        "tokenizer.chat_template.rerank": TEMPLATE})
