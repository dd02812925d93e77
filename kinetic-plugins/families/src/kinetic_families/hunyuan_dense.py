"""Hunyuan, dense ("hunyuan-dense"): Tencent's Hunyuan 0.5B to 7B.

Llama's layout with NeoX rotary embeddings, and per-head RMS norms of queries and keys after the rotation.
rope.scaling.alpha raises the rotary base to base * alpha^(head_dim / (head_dim - 2)), NTK-aware scaling
(llama.cpp: src/models/hunyuan-vl.cpp, whose graph hunyuan-dense shares).

Hyper-parameters: hunyuan-dense.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon,
rope.freq_base, rope.scaling.*, rope.scaling.alpha}. Tensors: decoder.py's, plus blk.{i}.attn_{q,k}_norm
[head_dim].
"""

from __future__ import annotations

import math

import numpy as np

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import Dims, attention, feed_forward, head_norms, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    if any(loader.hp("rope.dimension_sections", list, [])):
        raise ModelFileError("rotary embeddings in sections (rope.dimension_sections) are not supported yet")
    rope = rotary(loader, d, neox=True, base=rotary_base(loader, d))
    blocks = []
    for i in range(d.n_layer):
        blocks += [
            attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim), **head_norms(loader, i, d),
                      norms_after_rope=True),
            feed_forward(loader, i, d, "silu"),
        ]
    return stack(loader, d, blocks)


def rotary_base(loader: Loader, d: Dims) -> float:
    """rope.freq_base, raised by rope.scaling.alpha where the file has it, in float32 as llama.cpp computes it."""
    base = np.float32(loader.hp("rope.freq_base", float, 10000.0))
    alpha = np.float32(loader.hp("rope.scaling.alpha", float, 0.0))
    if alpha > 0:
        base = base * alpha ** (np.float32(d.head_dim) / np.float32(d.head_dim - 2))
    return float(base)


FAMILY = Family(name="hunyuan-dense", architectures=("hunyuan-dense",), build=build)
