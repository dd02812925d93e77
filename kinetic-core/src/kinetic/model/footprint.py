"""What a model needs as it runs, from its header: the bytes of its weights, those one decoded token reads,
its mixture-of-experts weights, and its KV cache."""

from __future__ import annotations

import numpy as np

from kinetic.contracts import ModelFile

EXPERTS = "_exps"  # llama.cpp's name for the stacked experts of a layer: blk.N.ffn_up_exps.weight ...


def weight_bytes(model: ModelFile) -> int:
    return sum(tensor.nbytes for tensor in model.tensors.values())


def expert_bytes(model: ModelFile) -> int:
    """The bytes of every expert of every layer; 0 for a dense model."""
    return sum(tensor.nbytes for name, tensor in model.tensors.items() if EXPERTS in name)


def bytes_per_token(model: ModelFile) -> int:
    """The weight bytes one decoded token reads: all of them but the token-embedding table, of which it reads
    one row (the whole table where the model has no output layer of its own and its head reads the table),
    and of a mixture of experts only the expert_used_count of its expert_count experts."""
    total = expert_bytes_per_token(model)
    for name, tensor in model.tensors.items():
        if EXPERTS in name:
            continue
        if name == "token_embd.weight" and "output.weight" in model.tensors:
            total += tensor.nbytes // tensor.shape[-1]
        else:
            total += tensor.nbytes
    return total


def expert_bytes_per_token(model: ModelFile) -> int:
    """The expert bytes one decoded token reads: expert_used_count of every layer's expert_count experts."""
    used, count = int(model.arch_value("expert_used_count", 0) or 0), int(model.arch_value("expert_count", 0) or 0)
    return expert_bytes(model) * used // count if count else expert_bytes(model)


def cache_bytes(model: ModelFile, tokens: int, element_bytes: int) -> int:
    """The keys and values of `tokens` tokens in every layer (an upper bound for models whose recurrent layers
    keep no such cache); head_count_kv may be one number or one per layer."""
    layers = int(model.arch_value("block_count", 1))
    heads = np.asarray(model.arch_value("attention.head_count", 1))
    kv_heads = np.asarray(model.arch_value("attention.head_count_kv", heads))
    kv_total = int(kv_heads.sum()) if kv_heads.ndim else layers * int(kv_heads)
    width = int(model.arch_value("embedding_length", 1))
    head_dim = int(model.arch_value("attention.key_length", width // int(heads.max())))
    return max(1, 2 * kv_total * head_dim * tokens * element_bytes)
