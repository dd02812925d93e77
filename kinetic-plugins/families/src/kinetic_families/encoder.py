"""What the encoder families share (bert, nomic-bert): LayerNorms with biases, and the stack around their layers,
read the way llama.cpp reads them (src/models/bert.cpp)."""

from __future__ import annotations

import math
from typing import Optional

from kinetic.contracts.blocks import Attention, Block, LayerNorm, Rope, Stack, Weight
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import Dims


def layer_norm(loader: Loader, name: str, d: Dims) -> LayerNorm:
    """{name}.weight and {name}.bias, over n_embd."""
    return LayerNorm(loader.weight(f"{name}.weight", (d.n_embd,)), loader.weight(f"{name}.bias", (d.n_embd,)), d.eps)


def encoder_stack(loader: Loader, d: Dims, blocks: list[Block], positions: bool) -> Stack:
    """The encoder: its input is each token's embedding plus token type 0's row (where token_types is given) and,
    with positions, its position's row of position_embd, through token_embd_norm; no output norm. It gives hidden
    states, so its output projection is its embedding, which no route asks logits of."""
    embedding = loader.weight("token_embd.weight", (None, d.n_embd))
    return Stack(
        embedding=embedding,
        embedding_scale=1.0,
        blocks=tuple(blocks),
        output_norm=None,
        output=embedding,
        n_embd=d.n_embd,
        n_vocab=embedding.shape[0],
        context_length=d.context_length,
        token_types=loader.optional("token_types.weight", (None, d.n_embd)),
        position_embedding=loader.weight("position_embd.weight", (None, d.n_embd)) if positions else None,
        embedding_norm=layer_norm(loader, "token_embd_norm", d),
    )


def attention(loader: Loader, i: int, d: Dims, qkv: tuple[Weight, Weight, Weight], rope: Rope,
              **biases: Optional[Weight]) -> Attention:
    """Layer i's bidirectional attention on the residual stream itself, of the q, k, v given (with the biases
    given), through attn_output (its bias optional), then attn_output_norm after the residual add."""
    blk = f"blk.{i}."
    q, k, v = qkv
    return Attention(
        norm=None,
        q=q,
        k=k,
        v=v,
        o=loader.weight(blk + "attn_output.weight", (d.n_embd, d.n_head * d.head_dim)),
        n_head=d.n_head,
        n_head_kv=d.n_head_kv,
        head_dim=d.head_dim,
        rope=rope,
        scale=1 / math.sqrt(d.head_dim),
        o_bias=loader.optional(blk + "attn_output.bias", (d.n_embd,)),
        causal=False,
        residual_norm=layer_norm(loader, blk + "attn_output_norm", d),
        **biases,
    )
