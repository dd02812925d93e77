"""Qwen3.5, dense ("qwen35"): Gated DeltaNet layers with a gated attention layer every few.

Most layers are Gated DeltaNet linear attention; every full_attention_interval-th (or where
attention.recurrent_layers says false) is grouped-query attention whose q projection also yields an output gate,
with per-head q/k norms before the rotation. Each mixer follows attn_norm; the feed-forward follows
post_attention_norm (llama.cpp: src/models/qwen35.cpp). The rotation is interleaved multi-axis (IMROPE): a text
token's three axes all hold its position, which rotates each pair as NeoX does, provided rope.dimension_sections
gives every pair an axis. One multi-token prediction layer after the block_count - nextn_predict_layers layers
becomes Stack.prediction (llama.cpp: load_block_mtp, graph_mtp): a gated attention layer on eh_proj of the
normed embedding and the normed hidden state, with its own optional embedding, output norm and output.

Hyper-parameters: qwen35.{block_count, nextn_predict_layers, embedding_length, feed_forward_length,
context_length, attention.head_count, attention.head_count_kv, attention.key_length,
attention.layer_norm_rms_epsilon, attention.recurrent_layers or full_attention_interval (default 4),
rope.freq_base, rope.dimension_count, rope.dimension_sections, rope.scaling.*, ssm.conv_kernel,
ssm.inner_size, ssm.state_size (a head's width), ssm.group_count (q/k heads), ssm.time_step_rank (v heads)}.
Tensors: token_embd, output_norm, the optional output; per layer attn_norm, post_attention_norm,
ffn_{gate,up,down}, and either attn_{q [2 q width], k, v, output, q_norm, k_norm} or attn_qkv, attn_gate,
ssm_conv1d, ssm_dt.bias, ssm_a, ssm_beta, ssm_alpha, ssm_norm, ssm_out. The prediction layer: an attention
layer's and nextn.{eh_proj [n_embd, 2 n_embd], enorm, hnorm, and the optional embed_tokens, shared_head_head,
shared_head_norm}.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

from kinetic.contracts import Family
from kinetic.contracts.blocks import Attention, GatedDeltaNet, GatedFeedForward, PredictionInput, Rope, RmsNorm, Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import (Dims, FeedForwards, attention, feed_forward, head_norms, norm, read_dims, rotary,
                                      stack)


def dense(loader: Loader, i: int, d: Dims) -> GatedFeedForward:
    return feed_forward(loader, i, d, "silu", norm_name="post_attention_norm.weight")


def build(loader: Loader, ffn: FeedForwards = dense) -> Stack:
    """ffn: each layer's feed-forward, the prediction layer's too (Qwen3.5 MoE: experts)."""
    d = read_dims(loader)
    check_sections(loader, d.n_rot // 2)
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i, recurrent in enumerate(recurrent_layers(loader, d)):
        blocks.append(gated_delta_net(loader, i, d) if recurrent else gated_attention(loader, i, d, rope))
        blocks.append(ffn(loader, i, d))
    main = stack(loader, d, blocks)
    return dataclasses.replace(main, prediction=prediction(loader, d, rope, main, ffn))


def gated_attention(loader: Loader, i: int, d: Dims, rope: Rope) -> Attention:
    return attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim), output_gate=True, **head_norms(loader, i, d))


def prediction(loader: Loader, d: Dims, rope: Rope, main: Stack, ffn: FeedForwards) -> Optional[Stack]:
    """The prediction layer after the d.n_layer layers as a stack of its own; None unless the file holds one
    (llama.cpp runs exactly one)."""
    nextn = f"blk.{d.n_layer}.nextn."
    if d.n_nextn != 1 or nextn + "eh_proj.weight" not in loader.model.tensors:
        return None
    head_norm = loader.optional(nextn + "shared_head_norm.weight", (d.n_embd,))
    return dataclasses.replace(
        main,
        embedding=loader.optional(nextn + "embed_tokens.weight", main.embedding.shape) or main.embedding,
        blocks=(gated_attention(loader, d.n_layer, d, rope), ffn(loader, d.n_layer, d)),
        output_norm=RmsNorm(head_norm, d.eps) if head_norm is not None else main.output_norm,
        output=loader.optional(nextn + "shared_head_head.weight", main.output.shape) or main.output,
        input=PredictionInput(norm(loader, nextn + "enorm.weight", d.n_embd, d.eps),
                              norm(loader, nextn + "hnorm.weight", d.n_embd, d.eps),
                              loader.weight(nextn + "eh_proj.weight", (d.n_embd, 2 * d.n_embd))),
    )


def recurrent_layers(loader: Loader, d: Dims) -> list[bool]:
    """Which of the d.n_layer layers are Gated DeltaNet: attention.recurrent_layers, else all but every
    full_attention_interval-th (llama.cpp: llama_model_qwen35::load_arch_hparams)."""
    flags = loader.hp("attention.recurrent_layers", list, None)
    if flags is None:
        interval = loader.hp("full_attention_interval", int, 4)
        return [(i + 1) % interval != 0 for i in range(d.n_layer)]
    if len(flags) != d.n_layer + d.n_nextn:
        raise ModelFileError(f"metadata key {loader.arch}.attention.recurrent_layers has {len(flags)} entries for "
                             f"{d.n_layer + d.n_nextn} layers")
    return [bool(flag) for flag in flags[: d.n_layer]]


def check_sections(loader: Loader, pairs: int) -> None:
    """Refuse sections that leave a pair on the fourth axis, which a text token holds at 0 (ggml's
    ggml_mrope_cache_init, IMROPE: pair p reads axis p mod 3 while p is under 3 times that axis's section)."""
    sections = loader.hp("rope.dimension_sections", list)
    total = sum(sections)
    for pair in range(pairs):
        sector = pair % total if total else pair
        if not sector < 3 * sections[sector % 3]:
            raise ModelFileError(f"rope.dimension_sections {sections} leave rotated pair {pair} unrotated for text, "
                                 "which is not supported yet")


def gated_delta_net(loader: Loader, i: int, d: Dims) -> GatedDeltaNet:
    blk = f"blk.{i}."
    width, inner = loader.hp("ssm.conv_kernel", int), loader.hp("ssm.inner_size", int)
    head_dim, k_heads, v_heads = (loader.hp(f"ssm.{key}", int) for key in ("state_size", "group_count",
                                                                           "time_step_rank"))
    if inner != v_heads * head_dim or v_heads % k_heads:
        raise ModelFileError(f"Gated DeltaNet of {v_heads} value heads of {inner // v_heads} over {k_heads} key "
                             f"heads of {head_dim} is not supported yet")
    channels = 2 * k_heads * head_dim + inner
    return GatedDeltaNet(
        norm=norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps),
        qkv_proj=loader.weight(blk + "attn_qkv.weight", (channels, d.n_embd)),
        gate_proj=loader.weight(blk + "attn_gate.weight", (inner, d.n_embd)),
        beta_proj=loader.weight(blk + "ssm_beta.weight", (v_heads, d.n_embd)),
        alpha_proj=loader.weight(blk + "ssm_alpha.weight", (v_heads, d.n_embd)),
        conv=loader.weight(blk + "ssm_conv1d.weight", (channels, width)),
        dt_bias=loader.weight(blk + "ssm_dt.bias", (v_heads,)),
        a=loader.weight(blk + "ssm_a", (v_heads,)),
        out_norm=norm(loader, blk + "ssm_norm.weight", head_dim, d.eps),
        out_proj=loader.weight(blk + "ssm_out.weight", (d.n_embd, inner)),
        n_k_head=k_heads,
        n_v_head=v_heads,
        head_dim=head_dim,
        l2_eps=d.eps,
    )


FAMILY = Family(name="qwen35", architectures=("qwen35",), build=build)
