"""Granite 4.0 H ("granitehybrid"): IBM's Mamba-2 hybrids.

Granite 3's layout and scales with most layers' attention replaced by a Mamba-2 mixer; a layer whose
attention.head_count_kv entry is 0 is a Mamba-2 layer (llama.cpp: src/models/granite-hybrid.cpp). Files whose
layers all attend are converted to "granite".

Hyper-parameters: granitehybrid.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv (an array), attention.layer_norm_rms_epsilon, rope.freq_base,
rope.scaling.*, logit_scale, residual_scale, embedding_scale, attention.scale, ssm.conv_kernel,
ssm.inner_size, ssm.state_size, ssm.time_step_rank (Mamba-2's head count), ssm.group_count}, and in Granite
4.0 H Tiny and Small, whose feed-forwards are experts as Granite MoE's (granite_moe.py), expert_count,
expert_used_count and expert_shared_feed_forward_length. Tensors: decoder.py's for attention layers;
decoder.mamba2's for the others.
"""

from __future__ import annotations

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import attention, kv_heads_by_layer, mamba2, read_dims, stack, swiglu
from kinetic_families.granite import attention_scale, granite_rope, granite_scales
from kinetic_families.granite_moe import granite_experts


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    ffn = granite_experts if loader.hp("expert_count", int, 0) else swiglu  # Tiny and Small: experts
    rope, scale = granite_rope(loader, d), attention_scale(loader, d)
    blocks = []
    for i, kv_heads in enumerate(kv_heads_by_layer(loader, d.n_head)[: d.n_layer]):
        mixer = attention(loader, i, d, rope, scale) if kv_heads else mamba2(loader, i, d)
        blocks += [mixer, ffn(loader, i, d)]
    return stack(loader, d, blocks, **granite_scales(loader, loader.hp("logit_scale", float, 0.0)))


FAMILY = Family(name="granitehybrid", architectures=("granitehybrid",), build=build)
