"""gpt-oss ("gpt-oss", llama.cpp's LLM_ARCH_OPENAI_MOE): OpenAI's gpt-oss-20b and gpt-oss-120b.

Attention with q, k, v and output biases and a sink logit per head, on every second layer (the even ones)
within a sliding window, NeoX rotation with YaRN; then, after post_attention_norm, routed experts with biases:
the router (with its bias) picks the expert_used_count largest of expert_count logits, weighs them by the softmax
of those alone, and each expert's gated activation is swiglu_oai (llama.cpp: src/models/openai-moe.cpp).

Hyper-parameters: gpt-oss.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.head_count_kv, attention.key_length, attention.value_length,
attention.layer_norm_rms_epsilon, attention.sliding_window, attention.sliding_window_pattern, rope.freq_base,
rope.freq_base_swa, rope.scaling.*, expert_count, expert_used_count, expert_feed_forward_length}. Tensors:
token_embd, output_norm, output; per layer attn_norm, attn_{q,k,v,output} with their biases, attn_sinks [n_head],
post_attention_norm, ffn_gate_inp with its bias, ffn_{gate,up,down}_exps with theirs.
"""

from __future__ import annotations

import dataclasses
import math

from kinetic.contracts import Family
from kinetic.contracts.blocks import Experts, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import Dims, attention, experts, read_dims, rotary, sliding_layers, stack

PATTERN = 2  # llama.cpp's load_swa_pattern(ml, 2): a sliding-window layer, then a global one


def build(loader: Loader) -> Stack:
    d = read_dims(loader)
    window = loader.hp("attention.sliding_window", int)
    sliding = sliding_layers(loader, d.n_layer, PATTERN)
    rope = rotary(loader, d, neox=True)
    local_rope = rotary(loader, d, neox=True, base=loader.hp("rope.freq_base_swa", float, rope.base))
    blocks = []
    for i in range(d.n_layer):
        blk = f"blk.{i}."
        blocks += [attention(loader, i, d, local_rope if sliding[i] else rope, 1 / math.sqrt(d.n_rot),
                             sliding_window=window if sliding[i] else None,
                             o_bias=loader.weight(blk + "attn_output.bias", (d.n_embd,)),
                             sinks=loader.weight(blk + "attn_sinks.weight", (d.n_head,))),
                   gpt_oss_experts(loader, i, d)]
    return stack(loader, d, blocks)


def gpt_oss_experts(loader: Loader, i: int, d: Dims) -> Experts:
    block = experts(loader, i, d, gating="softmax_weight", norm_name="post_attention_norm.weight")
    blk, n_expert, n_ff = f"blk.{i}.", block.n_expert, block.gate.shape[1]
    return dataclasses.replace(
        block, normalize=False, activation="swiglu_oai",
        router_bias=loader.weight(blk + "ffn_gate_inp.bias", (n_expert,)),
        gate_bias=loader.weight(blk + "ffn_gate_exps.bias", (n_expert, n_ff)),
        up_bias=loader.weight(blk + "ffn_up_exps.bias", (n_expert, n_ff)),
        down_bias=loader.weight(blk + "ffn_down_exps.bias", (n_expert, d.n_embd)))


FAMILY = Family(name="gpt-oss", architectures=("gpt-oss",), build=build)
