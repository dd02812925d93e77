"""LFM2 ("lfm2"): Liquid AI's LFM2 and LFM2.5, dense.

Layers of two kinds, each followed by a SwiGLU feed-forward: most are gated short convolutions, the others
grouped-query attention with per-head query and key norms before the NeoX rotation. A layer whose
attention.head_count_kv entry is 0 is a convolution. The final norm is stored as token_embd_norm
(llama.cpp: src/models/lfm2.cpp).

Hyper-parameters: lfm2.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv (an array, 0 for convolution layers),
attention.layer_norm_rms_epsilon, attention.sliding_window, shortconv.l_cache, rope.freq_base,
rope.scaling.*}. Tensors: token_embd, token_embd_norm, the optional output; per layer attn_norm, ffn_norm,
ffn_{gate,up,down}, and either shortconv.{in_proj [3 n_embd, n_embd], conv [n_embd, l_cache], out_proj} or
attn_{q,k,v,output} with attn_{q,k}_norm [head_dim].
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import ShortConv, Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import (Dims, FeedForwards, attention, head_norms, kv_heads_by_layer, norm, read_dims,
                                      rotary, stack, swiglu)


def build(loader: Loader, ffn: FeedForwards = swiglu) -> Stack:
    """ffn: each layer's feed-forward (LFM2 MoE: experts after its leading dense layers)."""
    d = read_dims(loader)
    if not loader.hp("attention.causal", bool, True):
        raise ModelFileError("bidirectional attention (attention.causal false) is not supported yet")
    width = loader.hp("shortconv.l_cache", int)
    window = loader.hp("attention.sliding_window", int, 0) or None
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i, kv_heads in enumerate(kv_heads_by_layer(loader, d.n_head)[: d.n_layer]):
        if kv_heads:
            blocks.append(attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim), **head_norms(loader, i, d),
                                    sliding_window=window))
        else:
            blocks.append(short_conv(loader, i, d, width))
        blocks.append(ffn(loader, i, d))
    return stack(loader, d, blocks, output_norm="token_embd_norm.weight")


def short_conv(loader: Loader, i: int, d: Dims, width: int) -> ShortConv:
    blk = f"blk.{i}."
    return ShortConv(
        norm=norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps),
        in_proj=loader.weight(blk + "shortconv.in_proj.weight", (3 * d.n_embd, d.n_embd)),
        conv=loader.weight(blk + "shortconv.conv.weight", (d.n_embd, width)),
        out_proj=loader.weight(blk + "shortconv.out_proj.weight", (d.n_embd, d.n_embd)),
    )


FAMILY = Family(name="lfm2", architectures=("lfm2",), build=build)
