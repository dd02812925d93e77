"""The blocks every family maps onto and every device implements: plain data, no computation.

A family never computes and a device never reads GGUF names: a Stack of these dataclasses, holding
weight handles and hyper-parameters, is the whole contract between them (docs/architecture.md, section 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Union

import numpy as np

from kinetic.contracts.model_file import ModelFile
from kinetic.contracts.tensor_type import TensorType


@dataclass(frozen=True)
class Weight:
    """One tensor of the model file, or a run of a matrix's rows (a part of a fused tensor: nomic-bert's q, k and
    v of attn_qkv), not read until a device asks. shape is numpy order: [rows, row length]."""

    model: ModelFile = field(repr=False)  # its repr would print the whole file's metadata
    name: str
    rows: Optional[tuple[int, int]] = None  # [first, stop) of the matrix's rows; None: the whole tensor

    @property
    def key(self) -> str:
        """What names this weight alone, for a device's caches: the tensor's name, with its rows where a part."""
        return self.name if self.rows is None else f"{self.name}[{self.rows[0]}:{self.rows[1]}]"

    @property
    def type(self) -> TensorType:
        return self.model.tensors[self.name].type

    @property
    def shape(self) -> tuple[int, ...]:
        shape = self.model.tensors[self.name].shape[::-1]
        return shape if self.rows is None else (self.rows[1] - self.rows[0], *shape[1:])

    def part(self, first: int, stop: int) -> "Weight":
        """Rows [first, stop) of this matrix."""
        return Weight(self.model, self.name, (first, stop))

    def raw(self) -> np.ndarray:
        """The stored bytes, [rows, bytes per row] for a matrix, zero-copy from the memory map."""
        shape = self.model.tensors[self.name].shape[::-1]
        rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
        raw = self.model.raw(self.name).reshape(rows, -1)
        return raw if self.rows is None else raw[self.rows[0] : self.rows[1]]

    def rows_float32(self, indices: np.ndarray) -> np.ndarray:
        """[len(indices), row length] float32: those rows of the matrix, dequantized (an embedding's lookup)."""
        kind = self.type
        return kind.dequantize(self.raw()[indices].reshape(-1, kind.type_size)).reshape(len(indices), -1)

    def to_float32(self) -> np.ndarray:
        values = self.model.to_float32(self.name)
        return values if self.rows is None else values[self.rows[0] : self.rows[1]]


@dataclass(frozen=True)
class RmsNorm:
    """y = x / sqrt(mean(x^2) + eps) * weight (Zhang and Sennrich, 2019)."""

    weight: Weight
    eps: float


@dataclass(frozen=True)
class LayerNorm:
    """y = (x - mean(x)) / sqrt(var(x) + eps) * weight + bias (Ba, Kiros and Hinton, 2016)."""

    weight: Weight
    bias: Optional[Weight]
    eps: float


Norm = Union[RmsNorm, LayerNorm]


@dataclass(frozen=True)
class Yarn:
    """YaRN's blend of interpolated and extrapolated frequencies (Peng et al., 2023; docs/rotary.md)."""

    original_context: int  # the context length the model was trained at before its scaling
    beta_fast: float = 32.0  # pairs turning more than this often over that context keep their frequency
    beta_slow: float = 1.0  # pairs turning less often than this are fully interpolated


@dataclass(frozen=True)
class Rope:
    """Rotary position embedding (Su et al., 2021) over the first n_dims of each head; n_dims 0 rotates nothing.

    kinetic.rotary derives what devices apply: each pair's position multiplier and the rotated values' factor."""

    n_dims: int
    base: float
    neox: bool  # rotate pairs (i, i + n_dims/2) as GPT-NeoX does, rather than adjacent pairs (i, i + 1)
    scale: float = 1.0  # linear position scaling: positions are multiplied by this
    freq_factors: Optional[Weight] = None  # per-pair divisors of the frequencies (Llama 3.1 long context)
    yarn: Optional[Yarn] = None  # with YaRN, scale applies in full only to the slowest pairs
    attn_factor: float = 1.0  # multiplies the rotated values (rope.scaling.attn_factor)


@dataclass(frozen=True)
class Attention:
    """Grouped-query self-attention with a KV cache; x += post_norm(o(attend(q, k, v))) on norm(x), then
    x = residual_norm(x) where it has one (a post-norm encoder's, BERT)."""

    norm: Optional[Norm]  # None: the block reads the residual stream itself (OLMo 2, EXAONE 4, BERT)
    q: Weight
    k: Weight
    v: Weight
    o: Weight
    n_head: int
    n_head_kv: int
    head_dim: int
    rope: Rope
    scale: float  # multiplies q.k before the softmax
    q_bias: Optional[Weight] = None
    k_bias: Optional[Weight] = None
    v_bias: Optional[Weight] = None
    q_norm: Optional[RmsNorm] = None  # per head when its width is head_dim, else across the heads (OLMo 2)
    k_norm: Optional[RmsNorm] = None
    norms_after_rope: bool = False  # q_norm and k_norm follow the rotation (Hunyuan) rather than precede it
    post_norm: Optional[RmsNorm] = None  # on the block's output, before the residual add (Gemma 3)
    sliding_window: Optional[int] = None  # a token sees only the last sliding_window positions
    output_gate: bool = False  # q's rows hold each head's queries then its gate; o reads attended * sigmoid(gate)
    o_bias: Optional[Weight] = None
    sinks: Optional[Weight] = None  # [n_head]: a logit per head that joins the softmax's sum, attending to nothing
    causal: bool = True  # False: a row attends to every position of its sequence, later ones too (an encoder,
    # whose text runs in one pass)
    residual_norm: Optional[LayerNorm] = None


@dataclass(frozen=True)
class GatedFeedForward:
    """x += post_norm(down(act(gate(norm(x))) * up(norm(x)))): SwiGLU / GeGLU (Shazeer, 2020); without a gate
    x += down(act(up(norm(x)))) (BERT's); each product plus its bias where given. Then x = residual_norm(x) where
    it has one (a post-norm encoder's)."""

    norm: Optional[Norm]  # None: the block reads the residual stream itself
    gate: Optional[Weight]
    up: Weight
    down: Weight
    activation: Literal["silu", "gelu_tanh"]
    post_norm: Optional[RmsNorm] = None
    up_bias: Optional[Weight] = None
    down_bias: Optional[Weight] = None
    residual_norm: Optional[LayerNorm] = None


@dataclass(frozen=True)
class Experts:
    """A routed mixture-of-experts feed-forward (Shazeer et al., 2017), as llama.cpp runs it (build_moe_ffn in
    src/llama-graph.cpp; docs/experts.md).

    On h = norm(x): p = gating(router(h) + router_bias), softmax or sigmoid over the n_expert experts; the n_used
    experts with the largest p + selection_bias are picked, in that rank order; their weights w are their p,
    divided by the sum of the picked ones' when normalize, times weight_scale ("softmax_weight": the largest
    router outputs are picked and w is the softmax of theirs alone, gpt-oss). Then x += w_1 y_1 + w_2 y_2 + ...
    in rank order, y_r = down_e(act(gate_e(h), up_e(h))) of the expert picked r-th, each product plus its expert's
    bias where given, plus the shared expert's output on h where there is one, times sigmoid(shared_gate . h)
    where it has a gate. act: silu(g) * u, or gpt-oss's swiglu_oai (docs/experts.md)."""

    norm: RmsNorm
    router: Weight  # [n_expert, n_embd]
    gate: Weight  # [n_expert, n_ff, n_embd]
    up: Weight  # [n_expert, n_ff, n_embd]
    down: Weight  # [n_expert, n_embd, n_ff]
    n_used: int
    gating: Literal["softmax", "sigmoid", "softmax_weight"]
    normalize: bool
    activation: Literal["silu", "swiglu_oai"] = "silu"
    weight_scale: float = 1.0
    router_bias: Optional[Weight] = None  # [n_expert]
    gate_bias: Optional[Weight] = None  # [n_expert, n_ff]
    up_bias: Optional[Weight] = None  # [n_expert, n_ff]
    down_bias: Optional[Weight] = None  # [n_expert, n_embd]
    selection_bias: Optional[Weight] = None  # [n_expert]: added to p to pick, not to weigh (exp_probs_b)
    shared: Optional[GatedFeedForward] = None  # its norm None: it reads h
    shared_gate: Optional[Weight] = None  # [n_embd]

    @property
    def n_expert(self) -> int:
        return self.router.shape[0]


@dataclass(frozen=True)
class ShortConv:
    """LFM2's gated short convolution (Liquid AI, 2025): b, c, u = in_proj(norm(x)) split in three equal parts,
    then x += out_proj(c * conv(b * u)), conv causal per channel over the last `width` positions' b * u (positions
    before the first count as 0). A device keeps each position's b * u, so that a sequence truncates exactly."""

    norm: RmsNorm
    in_proj: Weight  # [3 * n_embd, n_embd]: b, c, u
    conv: Weight  # [n_embd, width]: each channel's weights, the oldest position's first
    out_proj: Weight  # [n_embd, n_embd]


@dataclass(frozen=True)
class Mamba2:
    """Mamba-2's selective state-space mixer (Dao and Gu, 2024), as llama.cpp runs it (src/models/mamba-base.cpp).

    z, v, dt = in_proj(norm(x)) split; v = silu(conv(v) + conv_bias), conv causal per channel over the last
    `width` positions' v; u, B, C = v split, u in n_head heads, B and C in n_group groups. Per head h of group g:
    t = softplus(dt_h + dt_bias_h); S_h = S_h exp(t a_h) + t u_h B_g^T (S_h: [head_dim, d_state], 0 before the
    first position); y_h = S_h C_g + d_h u_h. Then x += out_proj(out_norm(y * silu(z))), out_norm over each group."""

    norm: Optional[RmsNorm]  # None: the block reads the residual stream itself (a Parallel's mixer)
    in_proj: Weight  # [2 d_inner + 2 n_group d_state + n_head, n_embd]: z, v, dt
    conv: Weight  # [d_inner + 2 n_group d_state, width]: each channel's weights, the oldest position's first
    conv_bias: Optional[Weight]  # [d_inner + 2 n_group d_state]
    dt_bias: Weight  # [n_head]
    a: Weight  # [n_head, 1]: each head's decay rate (negative: -exp(A_log))
    d: Weight  # [n_head, 1]: each head's skip weight
    out_norm: Optional[RmsNorm]  # weight [n_group, d_inner / n_group] ([d_inner] for one group); None: y * silu(z)
    out_proj: Weight  # [n_embd, d_inner]
    n_head: int
    n_group: int
    d_state: int


@dataclass(frozen=True)
class GatedDeltaNet:
    """Qwen3.5's linear attention, the gated delta rule (Yang, Kautz and Hatamizadeh, 2024), as llama.cpp runs it
    (src/models/qwen35.cpp, delta-net-base.cpp; docs/recurrent.md).

    On h = norm(x): qkv = silu(conv(qkv_proj(h))), conv causal per channel over the last `width` positions'
    qkv_proj(h); q, k: n_k_head heads, v: n_v_head heads, all of head_dim; q and k each divided by
    sqrt(sum of squares + l2_eps). z = gate_proj(h), beta = sigmoid(beta_proj(h)), g = softplus(alpha_proj(h) +
    dt_bias) a. Per v head h, reading q and k head h mod n_k_head: S_h = S_h exp(g_h); d = beta_h (v_h - S_h k);
    S_h += d k^T; o_h = S_h q / sqrt(head_dim) (S_h: [head_dim, head_dim], rows by v, 0 before the first
    position). Then x += out_proj(out_norm(o_h) * silu(z_h)), out_norm over each head."""

    norm: RmsNorm
    qkv_proj: Weight  # [2 n_k_head head_dim + n_v_head head_dim, n_embd]: q, k, v
    gate_proj: Weight  # [n_v_head head_dim, n_embd]: z
    beta_proj: Weight  # [n_v_head, n_embd]
    alpha_proj: Weight  # [n_v_head, n_embd]
    conv: Weight  # [channels, width]: each channel's weights, the oldest position's first
    dt_bias: Weight  # [n_v_head]
    a: Weight  # [n_v_head]: each head's decay rate (negative: -exp(A_log))
    out_norm: RmsNorm  # weight [head_dim]
    out_proj: Weight  # [n_embd, n_v_head head_dim]
    n_k_head: int
    n_v_head: int
    head_dim: int
    l2_eps: float


Mixer = Union[Attention, GatedFeedForward, Experts, ShortConv, Mamba2, GatedDeltaNet]


@dataclass(frozen=True)
class Parallel:
    """Mixers reading one norm of the residual stream, their outputs summed in order: x += m_1(norm(x)) + m_2(norm(x))
    + ... (Falcon-H1's attention beside Mamba-2). Each mixer's own norm is None."""

    norm: RmsNorm
    mixers: tuple[Mixer, ...]


Block = Union[Mixer, Parallel]


@dataclass(frozen=True)
class PredictionInput:
    """A prediction block's input (Qwen3.5's multi-token prediction; llama.cpp: graph_mtp in src/models/qwen35.cpp):
    x = eh_proj([enorm(e), hnorm(h)]), e the row's token's embedding, h its vector (Row.vector): the main stack's
    hidden state after its output norm one position back, or the prediction's own for a draft's later tokens."""

    enorm: RmsNorm
    hnorm: RmsNorm
    eh_proj: Weight  # [n_embd, 2 n_embd]: the columns that take enorm(e), then those that take hnorm(h)


@dataclass(frozen=True)
class Stack:
    """A whole decoder or encoder: embedding, residual blocks in order, final norm and output projection."""

    embedding: Weight  # [n_vocab, n_embd]
    embedding_scale: float  # token embeddings are multiplied by this (Gemma: sqrt(n_embd))
    blocks: tuple[Block, ...]
    output_norm: Optional[Norm]  # None: the hidden states are the last block's output (a post-norm encoder)
    output: Weight  # [n_vocab, n_embd]; the embedding itself when the model ties them, or an encoder's, which
    # gives hidden states (kinetic.engine.embedding) and no logits that a route asks for
    n_embd: int
    n_vocab: int
    context_length: int
    residual_scale: float = 1.0  # every block's output is multiplied by this before it is added (Granite)
    logit_scale: float = 1.0  # the logits are multiplied by this (Granite: 1 / its logit_scale key)
    input: Optional[PredictionInput] = None  # the rows' input made from their embeddings and vectors, if given
    prediction: Optional["Stack"] = None  # the model's prediction block as a stack of its own (its input set):
    # from this stack's hidden states it predicts the token after next, RAD-1's drafts
    # an encoder's input: the embedding, plus row 0 of token_types (every token is sentence A's, as llama.cpp
    # gives it) and the row of position_embedding at the token's position, through embedding_norm
    token_types: Optional[Weight] = None  # [n_token_types, n_embd]
    position_embedding: Optional[Weight] = None  # [n_positions, n_embd]
    embedding_norm: Optional[LayerNorm] = None

    @property
    def causal(self) -> bool:
        """Whether each row attends to earlier positions only, so that a text may run in several passes."""
        return all(m.causal for m in self.mixers() if isinstance(m, Attention))

    def mixers(self) -> list[Mixer]:
        """Every block in order, a Parallel's mixers in its place: what devices keep state for, numbered so."""
        return [m for b in self.blocks for m in (b.mixers if isinstance(b, Parallel) else (b,))]
