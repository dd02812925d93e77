"""What most decoder families share, read the way llama.cpp reads it (src/llama-model.cpp, load_hparams).

Tensor names are llama.cpp's (gguf-py constants.TENSOR_NAMES); `blk.{i}.` prefixes those of layer i.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kinetic.contracts.blocks import Attention, Block, GatedFeedForward, Rope, RmsNorm, Stack
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError


@dataclass(frozen=True)
class Dims:
    """The hyper-parameters every decoder here has."""

    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int  # rotated dimensions of each head
    n_ff: int
    eps: float  # of every RMS norm
    context_length: int


def read_dims(loader: Loader) -> Dims:
    n_embd = loader.hp("embedding_length", int)
    n_head = loader.hp("attention.head_count", int)
    head_dim = loader.hp("attention.key_length", int, n_embd // n_head)
    if loader.hp("attention.value_length", int, head_dim) != head_dim:
        raise ModelFileError("values of another width than keys (attention.value_length) are not supported yet")
    return Dims(
        n_layer=loader.hp("block_count", int),
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=loader.hp("attention.head_count_kv", int, n_head),
        head_dim=head_dim,
        n_rot=loader.hp("rope.dimension_count", int, head_dim),
        n_ff=loader.hp("feed_forward_length", int),
        eps=loader.hp("attention.layer_norm_rms_epsilon", float),
        context_length=loader.hp("context_length", int),
    )


def rope_scale(loader: Loader) -> float:
    """The position scale of the file's rotary scaling: 1 / rope.scaling.factor for linear, 1 for none."""
    kind = loader.hp("rope.scaling.type", str, "linear")  # llama.cpp's default when the key is absent
    if kind not in ("none", "linear"):
        raise ModelFileError(f"{kind} rotary scaling is not supported yet")
    if loader.hp("rope.scaling.attn_factor", float, 1.0) != 1.0:
        raise ModelFileError("rope.scaling.attn_factor is not supported yet")
    factor = loader.hp("rope.scaling.factor", float, None)
    if factor is None:
        factor = loader.hp("rope.scale_linear", float, 0.0)  # the key's older name
    return 1.0 if kind == "none" or factor == 0.0 else 1.0 / factor


def norm(loader: Loader, name: str, width: int, eps: float) -> RmsNorm:
    return RmsNorm(loader.weight(name, (width,)), eps)


def head_norms(loader: Loader, i: int, d: Dims) -> dict[str, RmsNorm]:
    """Per-head RMS norms of queries and keys, before the rotation (Qwen3, Gemma 3)."""
    return {
        "q_norm": norm(loader, f"blk.{i}.attn_q_norm.weight", d.head_dim, d.eps),
        "k_norm": norm(loader, f"blk.{i}.attn_k_norm.weight", d.head_dim, d.eps),
    }


def attention(loader: Loader, i: int, d: Dims, rope: Rope, scale: float, **extra) -> Attention:
    """Layer i's attention: separate q, k, v (each with an optional bias, as llama.cpp allows) and output."""
    blk = f"blk.{i}."
    loader.refuse(blk + "attn_qkv.weight")
    q_rows, kv_rows = d.n_head * d.head_dim, d.n_head_kv * d.head_dim
    return Attention(
        norm=norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps),
        q=loader.weight(blk + "attn_q.weight", (q_rows, d.n_embd)),
        k=loader.weight(blk + "attn_k.weight", (kv_rows, d.n_embd)),
        v=loader.weight(blk + "attn_v.weight", (kv_rows, d.n_embd)),
        o=loader.weight(blk + "attn_output.weight", (d.n_embd, q_rows)),
        n_head=d.n_head,
        n_head_kv=d.n_head_kv,
        head_dim=d.head_dim,
        rope=rope,
        scale=scale,
        q_bias=loader.optional(blk + "attn_q.bias", (q_rows,)),
        k_bias=loader.optional(blk + "attn_k.bias", (kv_rows,)),
        v_bias=loader.optional(blk + "attn_v.bias", (kv_rows,)),
        **extra,
    )


def feed_forward(loader: Loader, i: int, d: Dims, activation: str,
                 post_norm: Optional[RmsNorm] = None) -> GatedFeedForward:
    blk = f"blk.{i}."
    return GatedFeedForward(
        norm=norm(loader, blk + "ffn_norm.weight", d.n_embd, d.eps),
        gate=loader.weight(blk + "ffn_gate.weight", (d.n_ff, d.n_embd)),
        up=loader.weight(blk + "ffn_up.weight", (d.n_ff, d.n_embd)),
        down=loader.weight(blk + "ffn_down.weight", (d.n_embd, d.n_ff)),
        activation=activation,
        post_norm=post_norm,
    )


def stack(loader: Loader, d: Dims, blocks: list[Block], embedding_scale: float = 1.0) -> Stack:
    """The whole decoder; without output.weight the output projection is the token embedding (tied)."""
    embedding = loader.weight("token_embd.weight", (None, d.n_embd))
    n_vocab = embedding.shape[0]
    return Stack(
        embedding=embedding,
        embedding_scale=embedding_scale,
        blocks=tuple(blocks),
        output_norm=norm(loader, "output_norm.weight", d.n_embd, d.eps),
        output=loader.optional("output.weight", (n_vocab, d.n_embd)) or embedding,
        n_embd=d.n_embd,
        n_vocab=n_vocab,
        context_length=d.context_length,
    )
