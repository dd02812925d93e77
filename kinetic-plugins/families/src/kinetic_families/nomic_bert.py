"""nomic-bert ("nomic-bert"): nomic-embed-text, an encoder run for its embeddings.

BERT's post-norm layers (bert.py) with rotary positions instead of position embeddings (NeoX pairs over whole
heads), q, k and v fused in one matrix, and a SwiGLU feed-forward without biases (llama.cpp:
src/models/nomic-bert.cpp, built by bert.cpp's graph).

Hyper-parameters: nomic-bert.{block_count, embedding_length, feed_forward_length, context_length,
attention.head_count, attention.layer_norm_epsilon, rope.freq_base, pooling_type}. Tensors: token_embd,
token_types (optional), token_embd_norm; per layer attn_qkv [q, k, v rows], attn_output (its bias optional),
attn_output_norm, ffn_{gate,up,down}, layer_output_norm.
"""

from __future__ import annotations

from kinetic.contracts import Family
from kinetic.contracts.blocks import Attention, GatedFeedForward, Rope, Stack
from kinetic.contracts.loader import Loader

from kinetic_families.decoder import Dims, read_dims, rotary
from kinetic_families import encoder
from kinetic_families.encoder import encoder_stack, layer_norm


def build(loader: Loader) -> Stack:
    d = read_dims(loader, eps_key="attention.layer_norm_epsilon")
    rope = rotary(loader, d, neox=True)
    blocks = []
    for i in range(d.n_layer):
        blocks += [attention(loader, i, d, rope), feed_forward(loader, i, d)]
    return encoder_stack(loader, d, blocks, positions=False)


def attention(loader: Loader, i: int, d: Dims, rope: Rope) -> Attention:
    width, kv_width = d.n_head * d.head_dim, d.n_head_kv * d.head_dim
    qkv = loader.weight(f"blk.{i}.attn_qkv.weight", (width + 2 * kv_width, d.n_embd))
    parts = (qkv.part(0, width), qkv.part(width, width + kv_width), qkv.part(width + kv_width, width + 2 * kv_width))
    return encoder.attention(loader, i, d, parts, rope)


def feed_forward(loader: Loader, i: int, d: Dims) -> GatedFeedForward:
    blk = f"blk.{i}."
    return GatedFeedForward(
        norm=None,
        gate=loader.weight(blk + "ffn_gate.weight", (d.n_ff, d.n_embd)),
        up=loader.weight(blk + "ffn_up.weight", (d.n_ff, d.n_embd)),
        down=loader.weight(blk + "ffn_down.weight", (d.n_embd, d.n_ff)),
        activation="silu",
        residual_norm=layer_norm(loader, blk + "layer_output_norm", d),
    )


FAMILY = Family(name="nomic-bert", architectures=("nomic-bert",), build=build)
