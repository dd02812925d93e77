"""EmbeddingGemma ("gemma-embedding"): Gemma 3's layers run bidirectionally, for embeddings (llama.cpp:
src/models/gemma-embedding.cpp).

Gemma 3's blocks (gemma3.py) with attention that sees both ways: a sliding-window layer within
attention.sliding_window // 2 positions on either side (llama.cpp's symmetric window), a global layer the whole
text. Its pooled vector then goes through the dense_2 and dense_3 projections where the file has them
(kinetic.engine.embedding), before normalisation.

Hyper-parameters: gemma-embedding.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.value_length,
attention.layer_norm_rms_epsilon, attention.sliding_window, attention.sliding_window_pattern, rope.freq_base,
rope.freq_base_swa, pooling_type}. Tensors: gemma3.py's, and the optional dense_2.weight, dense_3.weight.
"""

from __future__ import annotations

import dataclasses

from kinetic.contracts import Family
from kinetic.contracts.blocks import Attention, Stack
from kinetic.contracts.loader import Loader

from kinetic_families import gemma3


def build(loader: Loader) -> Stack:
    stack = gemma3.build(loader)
    blocks = tuple(dataclasses.replace(b, causal=False) if isinstance(b, Attention) else b for b in stack.blocks)
    return dataclasses.replace(stack, blocks=blocks)


FAMILY = Family(name="gemma-embedding", architectures=("gemma-embedding",), build=build)
