"""Gemma 3 ("gemma3"), the text decoder (llama.cpp: src/models/gemma3.cpp; Gemma Team, 2025).

Token embeddings scaled by sqrt(n_embd); RMS norms before and after both attention and the GELU-tanh
gated feed-forward; per-head q/k norms; NeoX rotary embeddings. Most layers attend within a sliding
window with their own rotary base (rope.freq_base_swa, 10000 when absent) and no rotary scaling; the
others are global and use rope.freq_base and the file's rotary scaling. Output tied to the embedding.

Hyper-parameters: gemma3.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.value_length,
attention.layer_norm_rms_epsilon, attention.sliding_window, attention.sliding_window_pattern,
rope.freq_base, rope.freq_base_swa, rope.scaling.*, final_logit_softcapping (refused)}.
Tensors: decoder.py's, plus blk.{i}.attn_{q,k}_norm [head_dim], blk.{i}.post_attention_norm and
blk.{i}.post_ffw_norm [n_embd].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Rope, Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import (Dims, attention, feed_forward, head_norms, post_norms, read_dims, rotary,
                                     sliding_layers, stack)

DEFAULT_PATTERN = 6  # llama.cpp's: five sliding-window layers, then one global


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    if loader.hp("final_logit_softcapping", float, 0.0):
        raise ModelFileError("logit softcapping is not supported yet")
    window = loader.hp("attention.sliding_window", int, 0)
    sliding = sliding_layers(loader, d.n_layer, DEFAULT_PATTERN) if window > 0 else [False] * d.n_layer
    global_rope = rotary(loader, d, neox=True)
    local_rope = Rope(d.n_rot, loader.hp("rope.freq_base_swa", float, 10000.0), neox=True)
    blocks = []
    for i in range(d.n_layer):
        after_attention, after_ffn = post_norms(loader, i, d)
        blocks += [
            attention(loader, i, d, local_rope if sliding[i] else global_rope, attention_scale(d),
                      **head_norms(loader, i, d), post_norm=after_attention,
                      sliding_window=window if sliding[i] else None),
            feed_forward(loader, i, d, "gelu_tanh", post_norm=after_ffn),
        ]
    return stack(loader, d, blocks, embedding_scale=math.sqrt(d.n_embd))


def attention_scale(d: Dims) -> float:
    """llama.cpp's choice, after gemma_pytorch's config: the 27B model (62 layers) scales by its model width."""
    if d.n_layer == 62:
        return 1 / math.sqrt(d.n_embd // d.n_head)
    return 1 / math.sqrt(d.head_dim)


FAMILY = Family(name="gemma3", architectures=("gemma3",), build=build)
