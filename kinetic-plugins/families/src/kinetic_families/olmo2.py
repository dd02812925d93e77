"""OLMo 2 and OLMo 3 ("olmo2").

No norm before attention or the SwiGLU feed-forward: each reads the residual stream itself, and RMS norms
follow both. Queries and keys are normed across all heads together before the NeoX rotation. OLMo 3 files
add a sliding window on three layers of four, whose rotation is unscaled (llama.cpp: src/models/olmo2.cpp).

Hyper-parameters: olmo2.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, attention.sliding_window,
attention.sliding_window_pattern, rope.freq_base, rope.scaling.*}. Tensors: decoder.py's without attn_norm
and ffn_norm, plus blk.{i}.attn_q_norm [n_head * head_dim], blk.{i}.attn_k_norm [n_head_kv * head_dim],
blk.{i}.post_attention_norm and blk.{i}.post_ffw_norm [n_embd].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Rope, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import (attention, feed_forward, head_norms, post_norms, read_dims, rotary,
                                      sliding_layers, stack)

DEFAULT_PATTERN = 4  # llama.cpp's: three sliding-window layers, then one global


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    window = loader.hp("attention.sliding_window", int, 0)
    sliding = sliding_layers(loader, d.n_layer, DEFAULT_PATTERN) if window > 0 else [False] * d.n_layer
    global_rope = rotary(loader, d, neox=True)
    local_rope = Rope(d.n_rot, global_rope.base, neox=True)
    blocks = []
    for i in range(d.n_layer):
        after_attention, after_ffn = post_norms(loader, i, d)
        blocks += [
            attention(loader, i, d, local_rope if sliding[i] else global_rope, 1 / math.sqrt(d.head_dim),
                      pre_norm=False, **head_norms(loader, i, d, across=True), post_norm=after_attention,
                      sliding_window=window if sliding[i] else None),
            feed_forward(loader, i, d, "silu", post_norm=after_ffn, norm_name=None),
        ]
    return stack(loader, d, blocks)


FAMILY = Family(name="olmo2", architectures=("olmo2",), build=build)
