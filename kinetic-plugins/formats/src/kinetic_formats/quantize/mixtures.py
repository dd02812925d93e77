"""Which type llama-quantize gives each tensor for a target file type, without an importance matrix: its rules for
the targets Kinetic writes (llama.cpp's src/llama-quant.cpp: tensor_allows_quantization,
llama_tensor_get_type_impl, tensor_type_fallback), as data and small functions."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# file type name -> (llama_ftype, the default tensor type)
FILE_TYPES = {"Q8_0": (7, "Q8_0"), "Q6_K": (18, "Q6_K"), "Q5_K_M": (17, "Q5_K"), "Q4_K_M": (15, "Q4_K"),
              "Q4_0": (2, "Q4_0"), "F16": (1, "F16")}
# names (substrings) never quantized: norms, routers, small convolutions, position and type tables
KEPT = ("_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel", "per_layer_model_proj",
        "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight", "indexer.q_proj.weight",
        "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight", "time_mix_w2.weight",
        "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight", "time_mix_a0.weight",
        "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight", "time_mix_g2.weight",
        "time_mix_decay_w1.weight", "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
        ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger",
        "a.rvq.codebook", "mm.a.code_embd")
KEPT_NAMES = ("position_embd.weight", "token_types.weight")
# a K-quant whose rows are not whole super-blocks falls back to a type of 32-weight blocks
FALLBACK = {"Q4_K": "Q5_0", "Q5_K": "Q5_1", "Q6_K": "Q8_0"}
CATEGORIES = (("attn_qkv.weight", "attn_v"), ("attn_kv_b.weight", "attn_v"), ("attn_v.weight", "attn_v"),
              ("attn_k.weight", "attn_k"), ("attn_q.weight", "attn_q"), ("attn_output.weight", "attn_output"),
              ("ffn_up", "ffn_up"), ("ffn_gate", "ffn_gate"), ("ffn_down", "ffn_down"))
LAYER = re.compile(r"blk\.(-?\d+)\.")


def allows_quantization(name: str, n_dims: int) -> bool:
    """tensor_allows_quantization: matrices named *weight, but for the KEPT ones."""
    return n_dims >= 2 and name.endswith("weight") and name not in KEPT_NAMES and not any(k in name for k in KEPT)


def category(name: str) -> str:
    """tensor_get_category, with attn_qkv and attn_kv_b counted as attn_v (category_is_attn_v)."""
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):
        return "token_embd"
    return next((kind for part, kind in CATEGORIES if part in name), "other")


def more_bits(layer: int, n_layer: int) -> bool:
    """use_more_bits: the first and last eighth of the layers, and every third between."""
    return layer < n_layer // 8 or layer >= 7 * n_layer // 8 or (layer - n_layer // 8) % 3 == 2


@dataclass
class Mixture:
    """The state llama-quantize keeps while it picks types in tensor order: the counters of attn_v and ffn_down."""

    file_type: str
    architecture: str
    n_layer: int
    n_expert: int
    n_attention_v: int
    tied: bool  # no output.weight: the embedding is quantized as the output
    seen: dict[str, int] = field(default_factory=lambda: {"attn_v": 0, "ffn_down": 0})

    def type_of(self, name: str, shape: tuple[int, ...], current: str) -> str:
        """The type of tensor `name` (shape in ggml order, its type `current`); call in the output's tensor order."""
        default = FILE_TYPES[self.file_type][1]
        if not allows_quantization(name, len(shape)):
            return current
        if default == "F16":  # not a quantized type: no mixture, no fallback
            return default
        chosen = self._mixed(name, shape, default)
        return _fitting(chosen, shape[0])

    def _mixed(self, name: str, shape: tuple[int, ...], default: str) -> str:
        kind, k_quants = category(name), self.file_type in ("Q4_K_M", "Q5_K_M")
        if kind == "output" or (self.tied and kind == "token_embd"):
            falls_back = self.architecture == "falcon" or shape[0] % block_size(default)
            return "Q8_0" if falls_back or default == "Q8_0" else "Q6_K"
        if kind == "attn_v":
            layer, self.seen["attn_v"] = self.seen["attn_v"], self.seen["attn_v"] + 1
            if self.n_expert == 8:
                return "Q8_0"
            return "Q6_K" if k_quants and more_bits(layer, self.n_attention_v) else default
        if kind == "attn_k" and self.n_expert == 8:
            return "Q8_0"
        if kind == "attn_output" and self.n_expert == 8 and self.file_type == "Q4_K_M" and \
                self.architecture != "falcon":
            return "Q5_K"
        if kind == "ffn_down":
            layer = self._layer(name)
            if self.file_type == "Q4_K_M" and self.architecture == "falcon":
                return "Q6_K" if layer < self.n_layer // 16 else "Q5_K" if more_bits(layer, self.n_layer) else "Q4_K"
            if k_quants and more_bits(layer, self.n_layer):
                return "Q6_K"
        return default

    def _layer(self, name: str) -> int:
        """The ffn_down's layer: its count so far, or with experts the layer its name says (layer_info)."""
        counted, self.seen["ffn_down"] = self.seen["ffn_down"], self.seen["ffn_down"] + 1
        if self.n_expert <= 1:
            return counted
        found = LAYER.match(name)
        return int(found[1]) if found else counted


def block_size(type_name: str) -> int:
    return 256 if type_name.endswith("_K") else 32


def _fitting(chosen: str, row: int) -> str:
    """tensor_type_fallback: a type whose blocks divide the row, F16 where none does."""
    if row % block_size(chosen) == 0:
        return chosen
    fallback = FALLBACK.get(chosen, chosen)
    return fallback if row % 32 == 0 else "F16"


def n_attention_v(names: list[str]) -> int:
    return sum(category(name) == "attn_v" for name in names)

