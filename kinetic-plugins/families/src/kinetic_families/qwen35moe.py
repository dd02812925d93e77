"""Qwen3.5 mixture of experts ("qwen35moe"): Qwen3.5-35B-A3B and its larger siblings.

Qwen3.5's Gated DeltaNet and gated attention layers, and its prediction layer, with routed experts in place of
every feed-forward, after post_attention_norm: a softmax router picks expert_used_count of expert_count experts,
their weights normalized to sum 1, beside a shared expert whose output is gated by sigmoid(ffn_gate_inp_shexp . h)
(llama.cpp: src/models/qwen35moe.cpp, build_layer_ffn).

Hyper-parameters: qwen35's, plus qwen35moe.{expert_count, expert_used_count, expert_feed_forward_length,
expert_shared_feed_forward_length}. Tensors: qwen35's without ffn_{gate,up,down}, plus blk.{i}.ffn_gate_inp,
ffn_{gate,up,down}_exps, ffn_{gate,up,down}_shexp and ffn_gate_inp_shexp [n_embd].
"""

from __future__ import annotations

import functools

from kinetic.contracts import Family

from kinetic_families import qwen35
from kinetic_families.decoder import experts

moe = functools.partial(experts, norm_name="post_attention_norm.weight")
FAMILY = Family(name="qwen35moe", architectures=("qwen35moe",), build=functools.partial(qwen35.build, ffn=moe))
