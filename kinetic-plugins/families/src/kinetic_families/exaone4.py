"""EXAONE 4.0 ("exaone4").

OLMo 2's arrangement (no norm before attention or the SwiGLU feed-forward, RMS norms after both) with
per-head query and key norms before the NeoX rotation. The 32B model (64 layers) attends within a 4096-token
window on three layers of four and rotates only in those; the smaller models rotate in every layer and have no
window. Layers past block_count - nextn_predict_layers are prediction layers llama.cpp leaves unused
(llama.cpp: src/models/exaone4.cpp).

Hyper-parameters: exaone4.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon,
attention.sliding_window, attention.sliding_window_pattern, nextn_predict_layers, rope.freq_base,
rope.scaling.*}. Tensors: decoder.py's without attn_norm and ffn_norm, plus blk.{i}.attn_{q,k}_norm [head_dim],
blk.{i}.post_attention_norm and blk.{i}.post_ffw_norm [n_embd], and the optional rope_freqs.weight [n_rot / 2].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Rope, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import (attention, feed_forward, head_norms, post_norms, read_dims, rotary,
                                      sliding_layers, stack)

WINDOWED_LAYERS = 64  # llama.cpp gives a window to the 64-layer model only
DEFAULT_WINDOW = 4096
DEFAULT_PATTERN = 4  # three sliding-window layers, then one global


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    windowed = d.n_layer == WINDOWED_LAYERS
    window = loader.hp("attention.sliding_window", int, DEFAULT_WINDOW) if windowed else 0
    sliding = sliding_layers(loader, d.n_layer, DEFAULT_PATTERN) if windowed else [False] * d.n_layer
    rope = rotary(loader, d, neox=True, freq_factors=loader.optional("rope_freqs.weight", (d.n_rot // 2,)))
    unrotated = Rope(0, rope.base, neox=True)
    blocks = []
    for i in range(d.n_layer):
        after_attention, after_ffn = post_norms(loader, i, d)
        blocks += [
            attention(loader, i, d, rope if sliding[i] or not windowed else unrotated, 1 / math.sqrt(d.head_dim),
                      pre_norm=False, **head_norms(loader, i, d), post_norm=after_attention,
                      sliding_window=window if sliding[i] else None),
            feed_forward(loader, i, d, "silu", post_norm=after_ffn, norm_name=None),
        ]
    return stack(loader, d, blocks)


FAMILY = Family(name="exaone4", architectures=("exaone4",), build=build)
