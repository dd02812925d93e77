"""Qwen3 mixture of experts ("qwen3moe"): Qwen3-30B-A3B and Qwen3-235B-A22B.

Qwen3's attention with routed experts in place of every feed-forward: a softmax router picks expert_used_count
of expert_count experts, their weights normalized to sum 1 (llama.cpp: src/models/qwen3moe.cpp).

Hyper-parameters: qwen3's, plus qwen3moe.{expert_count, expert_used_count, expert_feed_forward_length}.
Tensors: qwen3's without ffn_{gate,up,down}, plus blk.{i}.ffn_gate_inp.weight [n_expert, n_embd] and
blk.{i}.ffn_{gate,up}_exps.weight [n_expert, n_ff_exp, n_embd], ffn_down_exps.weight [n_expert, n_embd, n_ff_exp].
"""

from __future__ import annotations

import functools

from kinetic.contracts import Family

from kinetic_families import qwen3
from kinetic_families.decoder import experts

FAMILY = Family(name="qwen3moe", architectures=("qwen3moe",), build=functools.partial(qwen3.build, ffn=experts))
