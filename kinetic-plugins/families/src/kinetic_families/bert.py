"""BERT ("bert"): BGE, MiniLM and other BERT-style encoders (Devlin et al., 2019), run for their embeddings.

The input is each token's embedding plus token type 0's row and its position's row, through a LayerNorm. Then
post-norm layers: x = LayerNorm(x + attention(x)), bidirectional (a token attends to the whole text), then
x = LayerNorm(x + down(gelu(up(x)))); every product has its bias. No rotation and no output norm (llama.cpp:
src/models/bert.cpp).

Hyper-parameters: bert.{block_count, embedding_length, feed_forward_length, context_length, attention.head_count,
attention.layer_norm_epsilon, pooling_type}. Tensors: token_embd, token_types, position_embd, token_embd_norm;
per layer attn_{q,k,v,output}, attn_output_norm, ffn_{up,down}, layer_output_norm, each with its bias (a
product's is optional, as in llama.cpp).
"""

from __future__ import annotations

from kinetic.contracts import Family
from kinetic.contracts.blocks import Attention, GatedFeedForward, Rope, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import Dims, read_dims
from kinetic_families import encoder
from kinetic_families.encoder import encoder_stack, layer_norm

NO_ROTATION = Rope(n_dims=0, base=10000.0, neox=False)  # positions come from position_embd


def build(loader: Loader) -> Stack:
    d = read_dims(loader, eps_key="attention.layer_norm_epsilon")
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d), feed_forward(loader, i, d)]
    return encoder_stack(loader, d, blocks, positions=True)


def attention(loader: Loader, i: int, d: Dims) -> Attention:
    blk = f"blk.{i}."
    widths = {"q": d.n_head * d.head_dim, "k": d.n_head_kv * d.head_dim, "v": d.n_head_kv * d.head_dim}
    qkv = tuple(loader.weight(f"{blk}attn_{x}.weight", (width, d.n_embd)) for x, width in widths.items())
    biases = {f"{x}_bias": loader.optional(f"{blk}attn_{x}.bias", (width,)) for x, width in widths.items()}
    return encoder.attention(loader, i, d, qkv, NO_ROTATION, **biases)


def feed_forward(loader: Loader, i: int, d: Dims) -> GatedFeedForward:
    blk = f"blk.{i}."
    return GatedFeedForward(
        norm=None,
        gate=None,
        up=loader.weight(blk + "ffn_up.weight", (d.n_ff, d.n_embd)),
        down=loader.weight(blk + "ffn_down.weight", (d.n_embd, d.n_ff)),
        activation="gelu_tanh",  # ggml_gelu, the tanh approximation (LLM_FFN_GELU)
        up_bias=loader.optional(blk + "ffn_up.bias", (d.n_ff,)),
        down_bias=loader.optional(blk + "ffn_down.bias", (d.n_embd,)),
        residual_norm=layer_norm(loader, blk + "layer_output_norm", d),
    )


FAMILY = Family(name="bert", architectures=("bert",), build=build)
