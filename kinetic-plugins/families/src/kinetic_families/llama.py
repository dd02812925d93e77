"""Llama ("llama"): Llama 2 and 3, Mistral, SmolLM2 and other models built like Llama.

Pre-norm attention and a SwiGLU feed-forward; rotary embeddings on adjacent pairs, divided per pair by
rope_freqs.weight where Llama 3.1 and 3.2 store their long-context factors (llama.cpp: src/models/llama.cpp).

Hyper-parameters: llama.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.dimension_count,
rope.freq_base, rope.scaling.*}. Tensors: decoder.py's, plus the optional rope_freqs.weight [n_rot / 2].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import attention, feed_forward, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    if loader.hp("expert_count", int, 0):
        raise ModelFileError("llama mixture of experts (llama.expert_count) is not supported yet")
    rope = rotary(loader, d, neox=False, freq_factors=loader.optional("rope_freqs.weight", (d.n_rot // 2,)))
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim)), feed_forward(loader, i, d, "silu")]
    return stack(loader, d, blocks)


FAMILY = Family(name="llama", architectures=("llama",), build=build)
