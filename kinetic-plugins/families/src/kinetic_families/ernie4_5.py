"""ERNIE 4.5, dense ("ernie4_5"): Baidu's 0.3B model.

Llama's layout with rotary embeddings on adjacent pairs (llama.cpp: src/models/ernie4-5.cpp). llama.cpp loads
an optional blk.{i}.attn_output.bias and does not apply it; so does this family.

Hyper-parameters: ernie4_5.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.freq_base,
rope.scaling.*}. Tensors: decoder.py's.
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import attention, feed_forward, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    rope = rotary(loader, d, neox=False)
    blocks = []
    for i in range(d.n_layer):
        loader.leave(f"blk.{i}.attn_output.bias")
        blocks += [attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim)), feed_forward(loader, i, d, "silu")]
    return stack(loader, d, blocks)


FAMILY = Family(name="ernie4_5", architectures=("ernie4_5",), build=build)
