"""What most decoder families share, read the way llama.cpp reads it (src/llama-model.cpp, load_hparams).

Tensor names are llama.cpp's (gguf-py constants.TENSOR_NAMES); `blk.{i}.` prefixes those of layer i.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from kinetic.contracts.blocks import (Attention, Block, Experts, GatedFeedForward, Mamba2, Rope, RmsNorm, Stack, Weight,
                                      Yarn)
from kinetic.contracts.loader import Loader
from kinetic.errors import ModelFileError


@dataclass(frozen=True)
class Dims:
    """The hyper-parameters every decoder here has."""

    n_layer: int  # the layers a token runs through
    n_nextn: int  # after them, layers that predict further tokens (nextn_predict_layers), which llama.cpp skips
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int  # rotated dimensions of each head
    n_ff: int
    eps: float  # of every norm
    context_length: int


FeedForwards = Callable[[Loader, int, "Dims"], Block]  # layer i's feed-forward: dense, or experts in a MoE family


def read_dims(loader: Loader, eps_key: str = "attention.layer_norm_rms_epsilon") -> Dims:
    n_embd = loader.hp("embedding_length", int)
    n_head = loader.hp("attention.head_count", int)
    head_dim = loader.hp("attention.key_length", int, n_embd // n_head)
    if loader.hp("attention.value_length", int, head_dim) != head_dim:
        raise ModelFileError("values of another width than keys (attention.value_length) are not supported yet")
    n_nextn = loader.hp("nextn_predict_layers", int, 0)
    kv_heads = {n for n in kv_heads_by_layer(loader, n_head) if n}  # 0: a layer without attention (LFM2)
    if len(kv_heads) > 1:
        raise ModelFileError("layers with different numbers of KV heads are not supported yet")
    return Dims(
        n_layer=loader.hp("block_count", int) - n_nextn,
        n_nextn=n_nextn,
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=kv_heads.pop() if kv_heads else n_head,
        head_dim=head_dim,
        n_rot=loader.hp("rope.dimension_count", int, head_dim),
        n_ff=loader.hp("feed_forward_length", int),
        eps=loader.hp(eps_key, float),
        context_length=loader.hp("context_length", int),
    )


def kv_heads_by_layer(loader: Loader, n_head: int) -> list[int]:
    """attention.head_count_kv of each layer: the key's one number for all, or its array (llama.cpp reads both)."""
    value = loader.hp("attention.head_count_kv", (int, list), n_head)
    n_layer = loader.hp("block_count", int)
    if isinstance(value, int):
        return [value] * n_layer
    if len(value) != n_layer:
        raise ModelFileError(f"metadata key {loader.arch}.attention.head_count_kv has {len(value)} entries for "
                             f"{n_layer} layers")
    return [int(n) for n in value]


def rotary(loader: Loader, d: Dims, neox: bool, freq_factors: Optional[Weight] = None,
           base: Optional[float] = None) -> Rope:
    """The file's rotary embedding over d.n_rot dimensions (at rope.freq_base unless base is given), with its
    scaling: rope.scaling.type none, linear or yarn, as llama.cpp reads it (llama-model.cpp, load_hparams;
    llama-context.cpp)."""
    kind = loader.hp("rope.scaling.type", str, "linear")  # llama.cpp's default when the key is absent
    if kind not in ("none", "linear", "yarn"):
        raise ModelFileError(f"{kind} rotary scaling is not supported yet")
    factor = loader.hp("rope.scaling.factor", float, None)
    if factor is None:
        factor = loader.hp("rope.scale_linear", float, 0.0)  # the key's older name
    yarn = Yarn(loader.hp("rope.scaling.original_context_length", int, d.context_length)) if kind == "yarn" else None
    return Rope(d.n_rot, base if base is not None else loader.hp("rope.freq_base", float, 10000.0), neox,
                scale=1.0 if kind == "none" or factor == 0.0 else 1.0 / factor, freq_factors=freq_factors,
                yarn=yarn, attn_factor=loader.hp("rope.scaling.attn_factor", float, 1.0))


def sliding_layers(loader: Loader, n_layer: int, period: int) -> list[bool]:
    """Which layers attend within the window: attention.sliding_window_pattern as a per-layer array, or a period
    n (the family's default when absent) whose last layer is global (llama.cpp: llama_hparams::set_swa_pattern)."""
    pattern = loader.hp("attention.sliding_window_pattern", (int, list), period)
    if isinstance(pattern, list):
        if len(pattern) != n_layer:
            raise ModelFileError(f"metadata key {loader.arch}.attention.sliding_window_pattern has {len(pattern)} "
                                 f"entries for {n_layer} layers")
        return [bool(flag) for flag in pattern]
    return [pattern == 0 or i % pattern < pattern - 1 for i in range(n_layer)]


def norm(loader: Loader, name: str, width: int, eps: float) -> RmsNorm:
    return RmsNorm(loader.weight(name, (width,)), eps)


def head_norms(loader: Loader, i: int, d: Dims, across: bool = False) -> dict[str, RmsNorm]:
    """RMS norms of queries and keys: per head (Qwen3, Gemma 3), or across all heads (OLMo 2)."""
    q_width, k_width = (d.n_head * d.head_dim, d.n_head_kv * d.head_dim) if across else (d.head_dim, d.head_dim)
    return {
        "q_norm": norm(loader, f"blk.{i}.attn_q_norm.weight", q_width, d.eps),
        "k_norm": norm(loader, f"blk.{i}.attn_k_norm.weight", k_width, d.eps),
    }


def attention(loader: Loader, i: int, d: Dims, rope: Rope, scale: float, pre_norm: bool = True,
              output_gate: bool = False, **extra) -> Attention:
    """Layer i's attention: separate q, k, v (each with an optional bias, as llama.cpp allows) and output, after
    attn_norm unless pre_norm is False; with output_gate, attn_q holds each head's gate after its queries."""
    blk = f"blk.{i}."
    loader.refuse(blk + "attn_qkv.weight")
    q_rows, kv_rows = d.n_head * d.head_dim, d.n_head_kv * d.head_dim
    return Attention(
        norm=norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps) if pre_norm else None,
        q=loader.weight(blk + "attn_q.weight", (q_rows * (2 if output_gate else 1), d.n_embd)),
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
        output_gate=output_gate,
        **extra,
    )


def feed_forward(loader: Loader, i: int, d: Dims, activation: str, post_norm: Optional[RmsNorm] = None,
                 norm_name: Optional[str] = "ffn_norm.weight") -> GatedFeedForward:
    """Layer i's SwiGLU or GeGLU after its norm blk.{i}.{norm_name}; with norm_name None, on the residual itself."""
    blk = f"blk.{i}."
    return GatedFeedForward(
        norm=norm(loader, blk + norm_name, d.n_embd, d.eps) if norm_name else None,
        gate=loader.weight(blk + "ffn_gate.weight", (d.n_ff, d.n_embd)),
        up=loader.weight(blk + "ffn_up.weight", (d.n_ff, d.n_embd)),
        down=loader.weight(blk + "ffn_down.weight", (d.n_embd, d.n_ff)),
        activation=activation,
        post_norm=post_norm,
    )


def experts(loader: Loader, i: int, d: Dims, gating: str = "softmax", norm_name: str = "ffn_norm.weight",
            width: Optional[int] = None) -> Experts:
    """Layer i's routed experts after blk.{i}.{norm_name}, sized by expert_count, expert_used_count and their
    width (else expert_feed_forward_length, else feed_forward_length / expert_used_count), their weights
    normalized, with the optional selection bias exp_probs_b and shared expert ffn_{gate,up,down}_shexp, which
    ffn_gate_inp_shexp gates where present (llama.cpp: build_moe_ffn and its callers in src/models/)."""
    blk = f"blk.{i}."
    loader.refuse(blk + "ffn_gate_up_exps.weight")
    n_expert, n_used = loader.hp("expert_count", int), loader.hp("expert_used_count", int)
    n_ff = width or loader.hp("expert_feed_forward_length", int, d.n_ff // n_used)
    shared = blk + "ffn_up_shexp.weight" in loader.model.tensors
    return Experts(
        norm=norm(loader, blk + norm_name, d.n_embd, d.eps),
        router=loader.weight(blk + "ffn_gate_inp.weight", (n_expert, d.n_embd)),
        gate=loader.weight(blk + "ffn_gate_exps.weight", (n_expert, n_ff, d.n_embd)),
        up=loader.weight(blk + "ffn_up_exps.weight", (n_expert, n_ff, d.n_embd)),
        down=loader.weight(blk + "ffn_down_exps.weight", (n_expert, d.n_embd, n_ff)),
        n_used=n_used,
        gating=gating,
        normalize=True,
        selection_bias=loader.optional(blk + "exp_probs_b.bias", (n_expert,)),
        shared=GatedFeedForward(None, loader.weight(blk + "ffn_gate_shexp.weight", (None, d.n_embd)),
                                loader.weight(blk + "ffn_up_shexp.weight", (None, d.n_embd)),
                                loader.weight(blk + "ffn_down_shexp.weight", (d.n_embd, None)), "silu")
        if shared else None,
        shared_gate=loader.optional(blk + "ffn_gate_inp_shexp.weight", (d.n_embd,)),
    )


def swiglu(loader: Loader, i: int, d: Dims) -> GatedFeedForward:
    """Layer i's SwiGLU after ffn_norm: a family's dense feed-forward (FeedForwards)."""
    return feed_forward(loader, i, d, "silu")


def mamba2(loader: Loader, i: int, d: Dims, pre_norm: bool = True, out_norm_optional: bool = False) -> Mamba2:
    """Layer i's Mamba-2 mixer, sized by ssm.*, after attn_norm unless pre_norm is False (Granite 4.0 H; Falcon-H1,
    whose ssm_norm is optional)."""
    blk = f"blk.{i}."
    out_norm = blk + "ssm_norm.weight"
    width, inner = loader.hp("ssm.conv_kernel", int), loader.hp("ssm.inner_size", int)
    state, heads, groups = (loader.hp(f"ssm.{key}", int) for key in ("state_size", "time_step_rank", "group_count"))
    channels = inner + 2 * groups * state
    return Mamba2(
        norm=norm(loader, blk + "attn_norm.weight", d.n_embd, d.eps) if pre_norm else None,
        in_proj=loader.weight(blk + "ssm_in.weight", (inner + channels + heads, d.n_embd)),
        conv=loader.weight(blk + "ssm_conv1d.weight", (channels, width)),
        conv_bias=loader.optional(blk + "ssm_conv1d.bias", (channels,)),
        dt_bias=loader.weight(blk + "ssm_dt.bias", (heads,)),
        a=loader.weight(blk + "ssm_a", (heads, 1)),
        d=loader.weight(blk + "ssm_d", (heads, 1)),
        out_norm=None if out_norm_optional and out_norm not in loader.model.tensors else
        RmsNorm(group_weights(loader, out_norm, groups, inner), d.eps),
        out_proj=loader.weight(blk + "ssm_out.weight", (d.n_embd, inner)),
        n_head=heads,
        n_group=groups,
        d_state=state,
    )


def group_weights(loader: Loader, name: str, groups: int, width: int) -> Weight:
    """A group norm's weights [groups, width / groups]; with one group llama-quantize stores them as [width]."""
    weight = loader.weight(name)
    if weight.shape not in ((groups, width // groups), (width,) if groups == 1 else None):
        raise ModelFileError(f"tensor {name} has shape {list(weight.shape)}, expected {[groups, width // groups]}")
    return weight


def post_norms(loader: Loader, i: int, d: Dims) -> tuple[RmsNorm, RmsNorm]:
    """Layer i's norms on the attention's and the feed-forward's outputs (Gemma 3, OLMo 2, EXAONE 4)."""
    return (norm(loader, f"blk.{i}.post_attention_norm.weight", d.n_embd, d.eps),
            norm(loader, f"blk.{i}.post_ffw_norm.weight", d.n_embd, d.eps))


def stack(loader: Loader, d: Dims, blocks: list[Block], embedding_scale: float = 1.0,
          output_norm: str = "output_norm.weight", **scales: float) -> Stack:
    """The whole decoder; without output.weight the output projection is the token embedding (tied). scales:
    Stack's residual_scale and logit_scale, where the family has them."""
    embedding = loader.weight("token_embd.weight", (None, d.n_embd))
    n_vocab = embedding.shape[0]
    for i in range(d.n_layer, d.n_layer + d.n_nextn):
        loader.leave(f"blk.{i}.")
    return Stack(
        embedding=embedding,
        embedding_scale=embedding_scale,
        blocks=tuple(blocks),
        output_norm=norm(loader, output_norm, d.n_embd, d.eps),
        output=loader.optional("output.weight", (n_vocab, d.n_embd)) or embedding,
        n_embd=d.n_embd,
        n_vocab=n_vocab,
        context_length=d.context_length,
        **scales,
    )
