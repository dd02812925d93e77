"""Falcon-H1 ("falcon-h1"): TII's hybrids, attention and Mamba-2 side by side in every layer.

Each layer's attention and Mamba-2 mixer read the same attn_norm of the residual stream and their outputs are
summed (a Parallel block), then a SwiGLU feed-forward follows. The model's multipliers (attention, SSM, MLP,
embedding and head) are folded into the weights by llama.cpp's converter (conversion/falcon_h1.py), so the graph
applies none (llama.cpp: src/models/falcon-h1.cpp). The feed-forward's norm is stored as blk.{i}.ffn_norm,
without the .weight suffix: the converter maps the whole name pre_ff_layernorm.weight.

Hyper-parameters: falcon-h1.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.layer_norm_rms_epsilon,
rope.freq_base, rope.scaling.*, ssm.conv_kernel, ssm.inner_size, ssm.state_size, ssm.time_step_rank,
ssm.group_count}. Tensors: decoder.py's attention (attn_output.bias loaded and not applied, as llama.cpp does)
and Mamba-2 (ssm_norm optional), ffn_norm, ffn_{gate,up,down}.
"""

from __future__ import annotations

import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Parallel, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import attention, feed_forward, mamba2, norm, read_dims, rotary, stack


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i in range(d.n_layer):
        blk = f"blk.{i}."
        loader.leave(blk + "attn_output.bias")
        mixers = (attention(loader, i, d, rope, 1 / math.sqrt(d.head_dim), pre_norm=False),
                  mamba2(loader, i, d, pre_norm=False, out_norm_optional=True))
        blocks += [Parallel(norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps), mixers),
                   feed_forward(loader, i, d, "silu", norm_name="ffn_norm")]
    return stack(loader, d, blocks)


FAMILY = Family(name="falcon-h1", architectures=("falcon-h1",), build=build)
