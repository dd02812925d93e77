"""Granite ("granite"): IBM Granite 3 dense models.

Llama's layout, rotary embeddings on adjacent pairs, with four scales from the file: token embeddings
multiplied by embedding_scale, attention scores by attention.scale, every block's output by residual_scale
before it is added, and the logits divided by logit_scale (llama.cpp: src/models/granite.cpp).

Hyper-parameters: granite.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.layer_norm_rms_epsilon, rope.freq_base,
rope.scaling.* (rope.scaling.finetuned false: no rotation), logit_scale, residual_scale, embedding_scale,
attention.scale}. Tensors: decoder.py's, plus the optional rope_freqs.weight [n_rot / 2].
"""

from __future__ import annotations

import math

import numpy as np

from kinetic.contracts import Family
from kinetic.contracts.blocks import Rope, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import Dims, FeedForwards, attention, read_dims, rotary, stack, swiglu


def build(loader: Loader, ffn: FeedForwards = swiglu) -> Stack:
    """ffn: each layer's feed-forward (Granite MoE: experts)."""
    d = read_dims(loader)
    rope, scale = granite_rope(loader, d), attention_scale(loader, d)
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope, scale), ffn(loader, i, d)]
    return stack(loader, d, blocks, **granite_scales(loader, loader.hp("logit_scale", float)))


def granite_rope(loader: Loader, d: Dims) -> Rope:
    if loader.hp("rope.scaling.finetuned", bool, True):  # Granite's switch for the rotation
        return rotary(loader, d, neox=False, freq_factors=loader.optional("rope_freqs.weight", (d.n_rot // 2,)))
    return Rope(0, 10000.0, neox=False)


def attention_scale(loader: Loader, d: Dims) -> float:
    return loader.hp("attention.scale", float, 0.0) or 1 / math.sqrt(d.head_dim)


def granite_scales(loader: Loader, logit_scale: float) -> dict[str, float]:
    """The stack's embedding, residual and logit scales; 0 in the file means none. llama.cpp multiplies the
    logits by 1.0f / logit_scale, a float32 quotient."""
    return {"embedding_scale": loader.hp("embedding_scale", float, 0.0) or 1.0,
            "residual_scale": loader.hp("residual_scale", float, 0.0) or 1.0,
            "logit_scale": float(np.float32(1) / np.float32(logit_scale)) if logit_scale else 1.0}


FAMILY = Family(name="granite", architectures=("granite",), build=build)
