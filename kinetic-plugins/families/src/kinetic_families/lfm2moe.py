"""LFM2 mixture of experts ("lfm2moe"): Liquid AI's LFM2-8B-A1B and LFM2.5 MoE.

LFM2's short-convolution and attention layers; after the first leading_dense_block_count layers, whose
feed-forwards are dense, routed experts: a router gated by expert_gating_func (1 softmax, 2 sigmoid) picks
expert_used_count of expert_count experts by its probabilities plus the layer's exp_probs_b, and weighs them by
the probabilities alone, normalized to sum 1 (llama.cpp: src/models/lfm2moe.cpp, src/models/lfm2.cpp).

Hyper-parameters: lfm2's, plus lfm2moe.{leading_dense_block_count, expert_count, expert_used_count,
expert_feed_forward_length, expert_gating_func}. Tensors: lfm2's, with the expert layers' ffn_{gate,up,down}
replaced by ffn_gate_inp, ffn_{gate,up,down}_exps and exp_probs_b.bias [n_expert].
"""

from __future__ import annotations

import functools

from kinetic.contracts import Family
from kinetic.contracts.blocks import Block
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError

from kinetic_families import lfm2
from kinetic_families.decoder import Dims, experts, swiglu

GATINGS = {1: "softmax", 2: "sigmoid"}  # llama.cpp's llama_expert_gating_func_type


def feed_forward(loader: Loader, i: int, d: Dims) -> Block:
    if i < loader.hp("leading_dense_block_count", int, 0):
        return swiglu(loader, i, d)
    gating = loader.hp("expert_gating_func", int)
    if gating not in GATINGS:
        raise ModelFileError(f"expert_gating_func {gating} is not supported yet (1: softmax, 2: sigmoid)")
    return experts(loader, i, d, gating=GATINGS[gating])


FAMILY = Family(name="lfm2moe", architectures=("lfm2moe",), build=functools.partial(lfm2.build, ffn=feed_forward))
