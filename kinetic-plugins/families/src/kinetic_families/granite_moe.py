"""Granite MoE ("granitemoe"): IBM Granite 3 mixture-of-experts models (1B-A400M, 3B-A800M) and Granite MoE
Shared.

Granite's layout and scales with routed experts in place of every feed-forward, each feed_forward_length wide:
a softmax router picks expert_used_count of expert_count experts, their weights normalized to sum 1; Granite MoE
Shared adds a shared expert whose output joins theirs (llama.cpp: src/models/granite.cpp, build_layer_ffn).

Hyper-parameters: granite's, plus granitemoe.{expert_count, expert_used_count, expert_shared_feed_forward_length}.
Tensors: granite's without ffn_{gate,up,down}, plus blk.{i}.ffn_gate_inp, ffn_{gate,up,down}_exps and the
optional ffn_{gate,up,down}_shexp.
"""

from __future__ import annotations

import functools

from kinetic.contracts import Family
from kinetic.contracts.blocks import Experts
from kinetic.contracts.loader import Loader

from kinetic_families import granite
from kinetic_families.decoder import Dims, experts


def granite_experts(loader: Loader, i: int, d: Dims) -> Experts:
    return experts(loader, i, d, width=d.n_ff)


FAMILY = Family(name="granitemoe", architectures=("granitemoe",),
                build=functools.partial(granite.build, ffn=granite_experts))
