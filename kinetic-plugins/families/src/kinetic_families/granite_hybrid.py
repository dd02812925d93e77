"""Granite 4.0 H ("granitehybrid"): IBM's Mamba-2 hybrids.

Granite 3's layout and scales with most layers' attention replaced by a Mamba-2 mixer; a layer whose
attention.head_count_kv entry is 0 is a Mamba-2 layer (llama.cpp: src/models/granite-hybrid.cpp). Files whose
layers all attend are converted to "granite".

Hyper-parameters: granitehybrid.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv (an array), attention.layer_norm_rms_epsilon, rope.freq_base,
rope.scaling.*, logit_scale, residual_scale, embedding_scale, attention.scale, ssm.conv_kernel,
ssm.inner_size, ssm.state_size, ssm.time_step_rank (Mamba-2's head count), ssm.group_count, expert_count
(refused)}. Tensors: decoder.py's for attention layers; decoder.mamba2's for the others.
"""

from __future__ import annotations

from kinetic.contracts import Family
from kinetic.contracts.blocks import Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families.decoder import attention, feed_forward, kv_heads_by_layer, mamba2, read_dims, stack
from kinetic_families.granite import attention_scale, granite_rope, granite_scales


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    if loader.hp("expert_count", int, 0):
        raise ModelFileError("granitehybrid mixture of experts (granitehybrid.expert_count) is not supported yet")
    rope, scale = granite_rope(loader, d), attention_scale(loader, d)
    blocks = []
    for i, kv_heads in enumerate(kv_heads_by_layer(loader, d.n_head)[: d.n_layer]):
        mixer = attention(loader, i, d, rope, scale) if kv_heads else mamba2(loader, i, d)
        blocks += [mixer, feed_forward(loader, i, d, "silu")]
    return stack(loader, d, blocks, **granite_scales(loader, loader.hp("logit_scale", float, 0.0)))


FAMILY = Family(name="granitehybrid", architectures=("granitehybrid",), build=build)
