"""Small GGUF files for tests, written with gguf-py (the writer llama.cpp's own converters use).

write_gguf() writes given metadata and tensors; write_random_model() writes a random-weight model
of a given architecture, named and shaped as llama.cpp expects, for families with no real model here;
write_comparable_model() one whose greedy answers engines can be compared on (scripts/conformance.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Mapping, Optional

import gguf
import numpy as np
from gguf.constants import MODEL_ARCH_NAMES, MODEL_TENSOR, MODEL_TENSORS, TENSOR_NAMES


# Every architecture write_random_model writes: those of the built-in families.
ARCHITECTURES = ("llama", "qwen2", "qwen3", "gemma3", "granite", "olmo2", "exaone4", "ernie4_5", "hunyuan-dense",
                 "lfm2", "granitehybrid", "falcon-h1", "qwen35", "qwen3moe", "qwen35moe", "granitemoe", "lfm2moe",
                 "gpt-oss")
# and those of the built-in encoder families, which give embeddings, not text
ENCODERS = ("bert", "nomic-bert", "gemma-embedding")
# Comparable files beside each architecture's own, for what a file may add: name -> (architecture, metadata)
VARIANTS = {
    "qwen2-yarn": ("qwen2", {"qwen2.rope.scaling.type": "yarn", "qwen2.rope.scaling.factor": 4.0,
                             "qwen2.rope.scaling.original_context_length": 32}),
    "llama-linear": ("llama", {"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": 2.0,
                               "llama.rope.scaling.attn_factor": 0.9}),
    "olmo2-window": ("olmo2", {"olmo2.attention.sliding_window": 8, "olmo2.attention.sliding_window_pattern": 2,
                               "olmo2.rope.scaling.type": "yarn", "olmo2.rope.scaling.factor": 4.0,
                               "olmo2.rope.scaling.original_context_length": 32}),
    "hunyuan-dense-alpha": ("hunyuan-dense", {"hunyuan-dense.rope.scaling.alpha": 50.0}),
    # Granite 4.0 H Tiny's layout: experts as wide as the feed-forward, and a shared expert (write_comparable_model's)
    "granitehybrid-moe": ("granitehybrid", {"granitehybrid.expert_count": 8, "granitehybrid.expert_used_count": 2,
                                            "granitehybrid.expert_shared_feed_forward_length": 512}),
}
# Granite's logits multiplied by 8 rather than divided: its factory scale leaves them too flat to compare
COMPARABLE = {**{arch: (arch, {}) for arch in ARCHITECTURES}, "granite": ("granite", {"granite.logit_scale": 0.125}),
              "granitemoe": ("granitemoe", {"granitemoe.logit_scale": 0.125}),
              **VARIANTS}


@dataclass(frozen=True)
class Dims:
    n_layer: int = 2
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    n_vocab: int = 300

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


def _shapes(arch: str, d: Dims, metadata: Mapping[str, Any]) -> dict[MODEL_TENSOR, tuple[int, ...]]:
    """numpy shapes ([rows, row length]) of the tensors the factory writes: a transformer's, LFM2's short
    convolutions' and Mamba-2's."""
    q, kv = d.n_head * d.head_dim, d.n_head_kv * d.head_dim
    q_norm, k_norm = (q, kv) if arch in _NORMS_ACROSS_HEADS else (d.head_dim, d.head_dim)
    return {
        MODEL_TENSOR.TOKEN_EMBD: (d.n_vocab, d.n_embd), MODEL_TENSOR.OUTPUT: (d.n_vocab, d.n_embd),
        MODEL_TENSOR.OUTPUT_NORM: (d.n_embd,), MODEL_TENSOR.ATTN_NORM: (d.n_embd,),
        MODEL_TENSOR.ATTN_Q: (q, d.n_embd), MODEL_TENSOR.ATTN_K: (kv, d.n_embd), MODEL_TENSOR.ATTN_V: (kv, d.n_embd),
        MODEL_TENSOR.ATTN_OUT: (d.n_embd, q), MODEL_TENSOR.ATTN_Q_NORM: (q_norm,),
        MODEL_TENSOR.ATTN_K_NORM: (k_norm,), MODEL_TENSOR.ATTN_POST_NORM: (d.n_embd,),
        MODEL_TENSOR.FFN_NORM: (d.n_embd,), MODEL_TENSOR.FFN_PRE_NORM: (d.n_embd,),
        MODEL_TENSOR.FFN_POST_NORM: (d.n_embd,), MODEL_TENSOR.FFN_GATE: (d.n_ff, d.n_embd),
        MODEL_TENSOR.FFN_UP: (d.n_ff, d.n_embd), MODEL_TENSOR.FFN_DOWN: (d.n_embd, d.n_ff),
        MODEL_TENSOR.TOKEN_EMBD_NORM: (d.n_embd,), MODEL_TENSOR.SHORTCONV_INPROJ: (3 * d.n_embd, d.n_embd),
        MODEL_TENSOR.SHORTCONV_CONV: (d.n_embd, SHORT_CONV_WIDTH), MODEL_TENSOR.SHORTCONV_OUTPROJ: (d.n_embd, d.n_embd),
        **_ssm_shapes(d, {key: metadata.get(f"{arch}.ssm.{key}", value) for key, value in SSM.items()},
                      metadata.get(f"{arch}.ssm.inner_size", 2 * d.n_embd)),
        **(_delta_net_shapes(d, {key: metadata.get(f"{arch}.ssm.{key}", value) for key, value in DELTA_NET.items()})
           if MOE.get(arch, arch) == "qwen35" else {}),
        MODEL_TENSOR.NEXTN_EH_PROJ: (d.n_embd, 2 * d.n_embd), MODEL_TENSOR.NEXTN_ENORM: (d.n_embd,),
        MODEL_TENSOR.NEXTN_HNORM: (d.n_embd,), MODEL_TENSOR.ATTN_SINKS: (d.n_head,),
        **_expert_shapes(d, metadata.get(f"{arch}.expert_count", EXPERTS["expert_count"]),
                         metadata.get(f"{arch}.expert_feed_forward_length", d.n_ff)),
        **(_encoder_shapes(d, metadata.get(f"{arch}.context_length", CONTEXT)) if arch in ENCODERS else {}),
    }


def _encoder_shapes(d: Dims, positions: int) -> dict[MODEL_TENSOR, tuple[int, ...]]:
    """An encoder's own tensors: token types, positions, post-norms, fused q, k, v, and EmbeddingGemma's
    projections after pooling."""
    q, kv = d.n_head * d.head_dim, d.n_head_kv * d.head_dim
    return {MODEL_TENSOR.TOKEN_TYPES: (TOKEN_TYPES, d.n_embd), MODEL_TENSOR.POS_EMBD: (positions, d.n_embd),
            MODEL_TENSOR.ATTN_OUT_NORM: (d.n_embd,), MODEL_TENSOR.LAYER_OUT_NORM: (d.n_embd,),
            MODEL_TENSOR.ATTN_QKV: (q + 2 * kv, d.n_embd), MODEL_TENSOR.DENSE_2_OUT: (2 * d.n_embd, d.n_embd),
            MODEL_TENSOR.DENSE_3_OUT: (d.n_embd, 2 * d.n_embd)}


def _expert_shapes(d: Dims, n_expert: int, n_ff: int) -> dict[MODEL_TENSOR, tuple[int, ...]]:
    """A mixture of experts' tensors: the router, the stacked experts, the selection bias and a shared expert."""
    return {MODEL_TENSOR.FFN_GATE_INP: (n_expert, d.n_embd), MODEL_TENSOR.FFN_GATE_EXP: (n_expert, n_ff, d.n_embd),
            MODEL_TENSOR.FFN_UP_EXP: (n_expert, n_ff, d.n_embd), MODEL_TENSOR.FFN_DOWN_EXP: (n_expert, d.n_embd, n_ff),
            MODEL_TENSOR.FFN_EXP_PROBS_B: (n_expert,), MODEL_TENSOR.FFN_GATE_INP_SHEXP: (d.n_embd,),
            MODEL_TENSOR.FFN_GATE_SHEXP: (d.n_ff, d.n_embd), MODEL_TENSOR.FFN_UP_SHEXP: (d.n_ff, d.n_embd),
            MODEL_TENSOR.FFN_DOWN_SHEXP: (d.n_embd, d.n_ff)}


def _delta_net_shapes(d: Dims, ssm: Mapping[str, int]) -> dict[MODEL_TENSOR, tuple[int, ...]]:
    """Qwen3.5's Gated DeltaNet tensors, with the file's ssm.* sizes, and its gated attention's doubled q."""
    heads, k_heads, width = ssm["time_step_rank"], ssm["group_count"], ssm["state_size"]
    inner, channels = heads * width, (heads + 2 * k_heads) * width
    return {MODEL_TENSOR.ATTN_Q: (2 * d.n_head * d.head_dim, d.n_embd),
            MODEL_TENSOR.ATTN_QKV: (channels, d.n_embd), MODEL_TENSOR.ATTN_GATE: (inner, d.n_embd),
            MODEL_TENSOR.SSM_BETA: (heads, d.n_embd), MODEL_TENSOR.SSM_ALPHA: (heads, d.n_embd),
            MODEL_TENSOR.SSM_CONV1D: (channels, ssm["conv_kernel"]), MODEL_TENSOR.SSM_DT: (heads,),
            MODEL_TENSOR.SSM_A: (heads,), MODEL_TENSOR.SSM_NORM: (width,), MODEL_TENSOR.SSM_OUT: (d.n_embd, inner)}


def _ssm_shapes(d: Dims, ssm: Mapping[str, int], inner: int) -> dict[MODEL_TENSOR, tuple[int, ...]]:
    """Mamba-2's tensors, with the file's ssm.* sizes and inner width (by default Granite 4.0 H's, 2 n_embd)."""
    groups, heads = ssm["group_count"], ssm["time_step_rank"]
    channels = inner + 2 * groups * ssm["state_size"]
    return {MODEL_TENSOR.SSM_IN: (inner + channels + heads, d.n_embd),
            MODEL_TENSOR.SSM_CONV1D: (channels, ssm["conv_kernel"]),
            MODEL_TENSOR.SSM_DT: (heads,), MODEL_TENSOR.SSM_A: (heads, 1), MODEL_TENSOR.SSM_D: (heads, 1),
            MODEL_TENSOR.SSM_NORM: (groups, inner // groups),
            MODEL_TENSOR.SSM_OUT: (d.n_embd, inner)}


def write_gguf(path: Path, arch: str, metadata: Mapping[str, Any], tensors: Mapping[str, Any]) -> Path:
    """Write metadata and tensors: float arrays, or (quantized bytes [rows, row bytes], GGMLQuantizationType)."""
    writer = gguf.GGUFWriter(str(path), arch)
    for key, value in metadata.items():
        writer.add_key_value(key, value, _value_type(value))
    for name, tensor in tensors.items():
        if isinstance(tensor, tuple):
            raw, qtype = tensor
            writer.add_tensor(name, raw, raw_dtype=qtype)
        else:
            writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _value_type(value: Any) -> gguf.GGUFValueType:
    if isinstance(value, (list, tuple)):
        return gguf.GGUFValueType.ARRAY
    if isinstance(value, bool):
        return gguf.GGUFValueType.BOOL
    if isinstance(value, int):
        return gguf.GGUFValueType.INT64 if value >= 2**31 else gguf.GGUFValueType.UINT32
    if isinstance(value, float):
        return gguf.GGUFValueType.FLOAT32
    return gguf.GGUFValueType.get_type(value)


def write_random_model(path: Path, arch: str = "llama", dims: Dims = Dims(), weight_type: str = "F32",
                       seed: int = 0, metadata: Mapping[str, Any] = {}, extra_tensors: Mapping[str, Any] = {},
                       without: Collection[str] = (), named: Optional[str] = None) -> Path:
    """A random-weight model of `arch` with the tensors llama.cpp names for it, matrices in weight_type.

    metadata adds or overrides keys, extra_tensors adds tensors, without leaves the named tensors out; named
    writes the file under another architecture name (a plugin's family with arch's layout).
    """
    arch_enum = next(a for a, name in MODEL_ARCH_NAMES.items() if name == arch)
    metadata = {**_model_metadata(arch, dims), **metadata}
    attends = _attending_layers(arch, metadata, dims.n_layer)
    experts = arch in MIXTURES or (arch in _EXPERTS_IF_COUNTED and f"{arch}.expert_count" in metadata)
    lead = metadata.get(f"{arch}.leading_dense_block_count", 0) if experts else dims.n_layer  # dense layers
    rng = np.random.default_rng(seed)
    shapes = _shapes(arch, dims, metadata)
    qtype = gguf.GGMLQuantizationType[weight_type]
    tensors: dict[str, Any] = {}
    shared = f"{arch}.expert_shared_feed_forward_length" in metadata
    for kind in MODEL_TENSORS[arch_enum]:
        if kind not in shapes or (kind in _SHARED_EXPERT and not shared) or kind in _UNWRITTEN.get(arch, ()):
            continue
        names = [TENSOR_NAMES[kind]] if "{bid}" not in TENSOR_NAMES[kind] else [
            TENSOR_NAMES[kind].format(bid=b) for b in range(dims.n_layer)
            if _in_layer(arch, kind, attends[b], b < lead, experts)]
        for name in names:
            values = rng.standard_normal(shapes[kind], dtype=np.float32) * 0.1
            if kind is MODEL_TENSOR.SSM_A:  # a decay rate: -exp(A_log), as the converter stores it
                values = -np.exp(values)
            suffix = {**_SUFFIXES, **_ARCH_SUFFIXES.get(arch, {})}.get(kind, ".weight")
            tensors[name + suffix] = values if kind in _ALWAYS_F32 else _stored(values, qtype)
            if kind in _BIASES.get(arch, ()):  # a matrix's, one a row; a norm's, one a value
                shape = shapes[kind][:-1] if len(shapes[kind]) > 1 else shapes[kind]
                tensors[name + ".bias"] = rng.standard_normal(shape, dtype=np.float32) * 0.1
    for b in _prediction_layers(arch, metadata, dims.n_layer):
        for kind in (MODEL_TENSOR.NEXTN_EH_PROJ, MODEL_TENSOR.NEXTN_ENORM, MODEL_TENSOR.NEXTN_HNORM):
            values = rng.standard_normal(shapes[kind], dtype=np.float32) * 0.1
            tensors[TENSOR_NAMES[kind].format(bid=b) + ".weight"] = _stored(values, qtype)
    tensors = {name: t for name, t in {**tensors, **extra_tensors}.items() if name not in without}
    if named is not None:
        metadata = {named + key[len(arch):] if key.startswith(f"{arch}.") else key: v for key, v in metadata.items()}
    return write_gguf(path, named or arch, metadata, tensors)


# What llama.cpp's converters write for an architecture beyond the common tensors and keys.
_BIASES = {"qwen2": (MODEL_TENSOR.ATTN_Q, MODEL_TENSOR.ATTN_K, MODEL_TENSOR.ATTN_V),
           "granitehybrid": (MODEL_TENSOR.SSM_CONV1D,), "falcon-h1": (MODEL_TENSOR.SSM_CONV1D,),
           "gpt-oss": (MODEL_TENSOR.ATTN_Q, MODEL_TENSOR.ATTN_K, MODEL_TENSOR.ATTN_V, MODEL_TENSOR.ATTN_OUT,
                       MODEL_TENSOR.FFN_GATE_INP, MODEL_TENSOR.FFN_GATE_EXP, MODEL_TENSOR.FFN_UP_EXP,
                       MODEL_TENSOR.FFN_DOWN_EXP),
           "bert": (MODEL_TENSOR.ATTN_Q, MODEL_TENSOR.ATTN_K, MODEL_TENSOR.ATTN_V, MODEL_TENSOR.ATTN_OUT,
                    MODEL_TENSOR.FFN_UP, MODEL_TENSOR.FFN_DOWN, MODEL_TENSOR.TOKEN_EMBD_NORM,
                    MODEL_TENSOR.ATTN_OUT_NORM, MODEL_TENSOR.LAYER_OUT_NORM),
           "nomic-bert": (MODEL_TENSOR.TOKEN_EMBD_NORM, MODEL_TENSOR.ATTN_OUT_NORM, MODEL_TENSOR.LAYER_OUT_NORM)}
# what gguf-py lists for an architecture that its converter does not write
_UNWRITTEN = {"bert": (MODEL_TENSOR.OUTPUT_NORM, MODEL_TENSOR.ATTN_QKV, MODEL_TENSOR.CLS, MODEL_TENSOR.CLS_OUT),
              "nomic-bert": (MODEL_TENSOR.OUTPUT_NORM, MODEL_TENSOR.POS_EMBD)}
TOKEN_TYPES = 2  # an encoder's token types (BERT's type_vocab_size)
CONTEXT = 256  # every file's context_length: an encoder's positions
_SUFFIXES = {MODEL_TENSOR.SSM_DT: ".bias", MODEL_TENSOR.SSM_A: "", MODEL_TENSOR.SSM_D: "",
             MODEL_TENSOR.FFN_EXP_PROBS_B: ".bias"}  # llama.cpp's names
_ARCH_SUFFIXES = {"falcon-h1": {MODEL_TENSOR.FFN_PRE_NORM: ""}}  # its converter maps the whole name, .weight too
_PARALLEL = ("falcon-h1",)  # every layer holds attention and a recurrent mixer side by side
_PREDICTS = ("qwen35", "qwen35moe")  # writes its prediction layers' own tensors
_NORMS_ACROSS_HEADS = ("olmo2",)
# as llama.cpp's converter keeps them (conversion/base.py)
_ALWAYS_F32 = (MODEL_TENSOR.SHORTCONV_CONV, MODEL_TENSOR.SSM_CONV1D, MODEL_TENSOR.SSM_A, MODEL_TENSOR.SSM_D,
               MODEL_TENSOR.SSM_NORM, MODEL_TENSOR.FFN_GATE_INP, MODEL_TENSOR.FFN_GATE_INP_SHEXP,
               MODEL_TENSOR.TOKEN_TYPES, MODEL_TENSOR.POS_EMBD)
# a mixture-of-experts architecture -> the dense one whose layout and keys it shares
MOE = {"qwen3moe": "qwen3", "qwen35moe": "qwen35", "granitemoe": "granite", "lfm2moe": "lfm2"}
MIXTURES = (*MOE, "gpt-oss")  # the architectures whose feed-forwards are experts
_EXPERTS_IF_COUNTED = ("granitehybrid",)  # experts where the metadata gives expert_count (Granite 4.0 H Tiny)
EXPERTS = {"expert_count": 8, "expert_used_count": 2}  # {arch}.*
_EXPERT_EXTRAS = {"lfm2moe": {"leading_dense_block_count": 1, "expert_gating_func": 2}}  # its first layer dense
SSM = {"conv_kernel": 4, "state_size": 16, "time_step_rank": 8, "group_count": 1}  # {arch}.ssm.*
DELTA_NET = {"conv_kernel": 4, "state_size": 16, "group_count": 2, "time_step_rank": 4}  # qwen35.ssm.*
SHORT_CONV_WIDTH = 3  # LFM2's shortconv.l_cache
_DENSE_FFN = (MODEL_TENSOR.FFN_GATE, MODEL_TENSOR.FFN_UP, MODEL_TENSOR.FFN_DOWN)
_SHARED_EXPERT = (MODEL_TENSOR.FFN_GATE_INP_SHEXP, MODEL_TENSOR.FFN_GATE_SHEXP, MODEL_TENSOR.FFN_UP_SHEXP,
                  MODEL_TENSOR.FFN_DOWN_SHEXP)
_EXPERT_FFN = (MODEL_TENSOR.FFN_GATE_INP, MODEL_TENSOR.FFN_GATE_EXP, MODEL_TENSOR.FFN_UP_EXP, MODEL_TENSOR.FFN_DOWN_EXP,
               MODEL_TENSOR.FFN_EXP_PROBS_B, *_SHARED_EXPERT)
_ATTENTION = (MODEL_TENSOR.ATTN_Q, MODEL_TENSOR.ATTN_K, MODEL_TENSOR.ATTN_V, MODEL_TENSOR.ATTN_OUT,
              MODEL_TENSOR.ATTN_Q_NORM, MODEL_TENSOR.ATTN_K_NORM)
_RECURRENT = (MODEL_TENSOR.ATTN_QKV, MODEL_TENSOR.ATTN_GATE, MODEL_TENSOR.SSM_BETA, MODEL_TENSOR.SSM_ALPHA,
              MODEL_TENSOR.SHORTCONV_INPROJ, MODEL_TENSOR.SHORTCONV_CONV, MODEL_TENSOR.SHORTCONV_OUTPROJ,
              MODEL_TENSOR.SSM_IN, MODEL_TENSOR.SSM_CONV1D, MODEL_TENSOR.SSM_DT, MODEL_TENSOR.SSM_A, MODEL_TENSOR.SSM_D,
              MODEL_TENSOR.SSM_NORM, MODEL_TENSOR.SSM_OUT)


def _prediction_layers(arch: str, metadata: Mapping[str, Any], n_layer: int) -> range:
    """The multi-token prediction layers, last of the file's (nextn_predict_layers): Qwen3.5's, attention layers
    with nextn.{eh_proj, enorm, hnorm}."""
    return range(n_layer - metadata.get(f"{arch}.nextn_predict_layers", 0) if arch in _PREDICTS else n_layer, n_layer)


def _attending_layers(arch: str, metadata: Mapping[str, Any], n_layer: int) -> list[bool]:
    """Which layers hold attention: where the file's KV head count (per layer: LFM2, Granite 4.0 H) is not 0, or
    not among attention.recurrent_layers, else every full_attention_interval-th (Qwen3.5)."""
    if f"{arch}.attention.recurrent_layers" in metadata:
        return [not flag for flag in metadata[f"{arch}.attention.recurrent_layers"]]
    if f"{arch}.full_attention_interval" in metadata:
        predicting = _prediction_layers(arch, metadata, n_layer)
        return [(i + 1) % metadata[f"{arch}.full_attention_interval"] == 0 or i in predicting for i in range(n_layer)]
    heads = metadata.get(f"{arch}.attention.head_count_kv", 1)
    return [bool(n) for n in heads] if isinstance(heads, list) else [True] * n_layer


def _in_layer(arch: str, kind: MODEL_TENSOR, attends: bool, dense: bool, experts: bool) -> bool:
    if arch in ENCODERS:
        return True
    if kind in _EXPERT_FFN:
        return experts and not dense
    if kind in _DENSE_FFN:
        return dense
    if arch in _PARALLEL:
        return True
    if kind in _ATTENTION:
        return attends
    return kind not in _RECURRENT or not attends


def _arch_metadata(arch: str, d: Dims) -> dict[str, Any]:
    """The architecture's own keys: its dense layout's (MOE), and its experts' where it has them."""
    layout = MOE.get(arch, arch)
    keys = _layout_metadata(layout, arch, d)
    if arch in MIXTURES:  # experts half the feed-forward's width, but Granite MoE's, which are as wide
        extras = {"expert_feed_forward_length": d.n_ff // 2} if arch != "granitemoe" else {}
        keys |= {f"{arch}.{key}": value for key, value in {**EXPERTS, **extras, **_EXPERT_EXTRAS.get(arch, {}),
                                                           "expert_shared_feed_forward_length": d.n_ff}.items()}
    return keys


def _layout_metadata(layout: str, arch: str, d: Dims) -> dict[str, Any]:
    if layout in ("gemma3", "gemma-embedding"):  # a small window, so that short tests reach past it
        gemma = {f"{arch}.attention.sliding_window": 4, f"{arch}.attention.key_length": d.head_dim,
                 f"{arch}.attention.value_length": d.head_dim, f"{arch}.rope.freq_base": 1000000.0}
        if layout == "gemma3":
            return gemma
        # a global layer after each windowed one: llama.cpp's build fails without a global layer
        return {**gemma, f"{arch}.attention.causal": False, f"{arch}.attention.sliding_window_pattern": 2,
                f"{arch}.pooling_type": 1,  # mean, then dense_2 and dense_3
                f"{arch}.dense_2_feat_in": d.n_embd, f"{arch}.dense_2_feat_out": 2 * d.n_embd,
                f"{arch}.dense_3_feat_in": 2 * d.n_embd, f"{arch}.dense_3_feat_out": d.n_embd}
    if layout == "lfm2":
        return {f"{arch}.shortconv.l_cache": SHORT_CONV_WIDTH,
                f"{arch}.attention.head_count_kv": [d.n_head_kv * (i % 2) for i in range(d.n_layer)]}  # odd: attention
    ssm = {**{f"{arch}.ssm.{key}": value for key, value in SSM.items()}, f"{arch}.ssm.inner_size": 2 * d.n_embd}
    if layout == "granitehybrid":
        return {**ssm, f"{arch}.attention.head_count_kv": [d.n_head_kv * (i % 2) for i in range(d.n_layer)],
                f"{arch}.residual_scale": 0.22, f"{arch}.embedding_scale": 12.0}
    if layout == "falcon-h1":
        return ssm
    if layout == "qwen35":  # part of each head rotated, as Qwen3.5's, over sections giving every pair an axis
        return {**{f"{arch}.ssm.{key}": value for key, value in DELTA_NET.items()},
                f"{arch}.ssm.inner_size": DELTA_NET["time_step_rank"] * DELTA_NET["state_size"],
                f"{arch}.full_attention_interval": 2, f"{arch}.rope.dimension_count": d.head_dim // 2,
                f"{arch}.rope.dimension_sections": [2, 1, 1, 0], f"{arch}.rope.freq_base": 1000000.0}
    if layout == "gpt-oss":  # a small window, so that short tests reach past it
        return {f"{arch}.attention.sliding_window": 4}
    if layout in ENCODERS:  # WordPiece, bidirectional, BERT pooled by its [CLS] token (2), nomic-bert by the mean
        return {f"{arch}.attention.layer_norm_epsilon": 1e-12, f"{arch}.attention.causal": False,
                f"{arch}.pooling_type": 2 if layout == "bert" else 1, f"{arch}.rope.freq_base": 1000.0,
                **_wordpiece_vocab(d.n_vocab)}
    if layout == "granite":  # scales of the size Granite 3's files hold
        return {f"{arch}.logit_scale": 8.0, f"{arch}.residual_scale": 0.22, f"{arch}.embedding_scale": 12.0,
                f"{arch}.attention.scale": 0.015625}
    return {}


def _wordpiece_vocab(n_vocab: int) -> dict[str, Any]:
    """A BERT vocabulary as llama.cpp's converter writes one: [PAD] 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103
    (the "bert" defaults), word starts spelt with "▁", continuations bare."""
    tokens = ["[PAD]"] + [f"[unused{i}]" for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    tokens += ["▁" + c for c in letters] + letters
    tokens += [f"▁w{i}" for i in range(n_vocab - len(tokens))]
    return {"tokenizer.ggml.model": "bert", "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [3] * 104 + [1] * (len(tokens) - 104),
            "tokenizer.ggml.token_type_count": TOKEN_TYPES, "tokenizer.ggml.bos_token_id": 101,
            "tokenizer.ggml.eos_token_id": 102, "tokenizer.ggml.unknown_token_id": 100,
            "tokenizer.ggml.seperator_token_id": 102, "tokenizer.ggml.padding_token_id": 0}


def _stored(values: np.ndarray, qtype: gguf.GGMLQuantizationType) -> Any:
    if values.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
        return values
    return (gguf.quants.quantize(values, qtype), qtype)


def _model_metadata(arch: str, d: Dims) -> dict[str, Any]:
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"tok{i}" for i in range(d.n_vocab - len(tokens))]
    return {
        f"{arch}.context_length": CONTEXT, f"{arch}.embedding_length": d.n_embd, f"{arch}.block_count": d.n_layer,
        f"{arch}.feed_forward_length": d.n_ff, f"{arch}.attention.head_count": d.n_head,
        f"{arch}.attention.head_count_kv": d.n_head_kv, f"{arch}.attention.layer_norm_rms_epsilon": 1e-6,
        f"{arch}.rope.freq_base": 10000.0,
        "general.name": f"random {arch}",
        "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": [0.0] * len(tokens),
        "tokenizer.ggml.token_type": [3, 3, 3] + [6] * 256 + [1] * (len(tokens) - 259),
        "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
        **_arch_metadata(arch, d),
    }


def write_comparable_model(path: Path, arch: str, weight_type: str, metadata: Mapping[str, Any] = {}) -> Path:
    """write_random_model's model with two changes, so that greedy answers rarely fall on near-ties. A vocabulary
    of whole characters, without byte tokens: llama-server leaves out the probabilities of a step whose token
    ends in part of a UTF-8 character, which would misalign the steps. Norm weights near 1 and the output
    norm's near 4: the factory's are near 0, which leaves the layers' outputs small and the logits flat."""
    dims = Dims(n_embd=256, n_head=4, n_head_kv=2, n_ff=512)  # rows of whole 256-weight K-quant blocks
    tokens = ["<unk>", "<s>", "</s>", "\u2581", "\n"] + [chr(c) for c in range(33, 127)]
    tokens += [f"tok{i}" for i in range(dims.n_vocab - len(tokens))]
    vocab = {"tokenizer.ggml.tokens": tokens, "tokenizer.ggml.scores": [0.0] * len(tokens),
             "tokenizer.ggml.token_type": [3, 3, 3] + [1] * (len(tokens) - 3), **metadata}
    write_random_model(path, arch, dims, weight_type, seed=1, metadata=vocab)
    rng = np.random.default_rng(2)
    norms = {t.name: rng.normal(1.0, 0.1, tuple(int(n) for n in t.shape[::-1])).astype(np.float32)
             * (4 if t.name == "output_norm.weight" else 1)
             for t in gguf.GGUFReader(path).tensors if t.name.endswith(("norm.weight", "ffn_norm"))}
    return write_random_model(path, arch, dims, weight_type, seed=1, metadata=vocab, extra_tensors=norms)
