"""Qwen2 ("qwen2"): Qwen2 and Qwen2.5.

Llama's layout with biases on q, k and v, and rotary embeddings on GPT-NeoX pairs (i, i + n_rot / 2)
(llama.cpp: src/models/qwen2.cpp).

Hyper-parameters: qwen2.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.freq_base,
rope.scaling.*}. Tensors: decoder.py's; blk.{i}.attn_{q,k,v}.bias are optional, as in llama.cpp.
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import attention, feed_forward, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim)), feed_forward(loader, i, d, "silu")]
    return stack(loader, d, blocks)


FAMILY = Family(name="qwen2", architectures=("qwen2",), build=build)
