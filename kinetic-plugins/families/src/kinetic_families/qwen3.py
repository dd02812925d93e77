"""Qwen3 ("qwen3"): dense Qwen3 models.

Qwen2's layout with per-head RMS norms on queries and keys before the rotation, and no q/k/v biases in
the released models (llama.cpp: src/models/qwen3.cpp).

Hyper-parameters: qwen3.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon,
rope.freq_base, rope.scaling.*}. Tensors: decoder.py's, plus blk.{i}.attn_{q,k}_norm.weight [head_dim].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import FeedForwards, attention, head_norms, read_dims, rotary, stack, swiglu


def build(loader: Loader, ffn: FeedForwards = swiglu) -> Stack:
    """ffn: each layer's feed-forward (Qwen3 MoE: experts)."""
    d = read_dims(loader)
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim), **head_norms(loader, i, d)),
                   ffn(loader, i, d)]
    return stack(loader, d, blocks)


FAMILY = Family(name="qwen3", architectures=("qwen3",), build=build)
