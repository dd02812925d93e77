"""The reference operations: plain numpy on float32 values, float64 inside sums, rotations and softmax."""

from __future__ import annotations

from typing import Optional

import numpy as np

from kinetic import rotary
from kinetic.contracts.blocks import Rope
from kinetic.visibility import visible_spans


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    # x: [..., width] float32; weight: [width] float32
    x64 = x.astype(np.float64)
    inv_rms = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return (x64 * inv_rms).astype(np.float32) * weight


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray], eps: float) -> np.ndarray:
    # x: [..., width] float32; weight, bias: [width] float32
    x64 = x.astype(np.float64)
    centered = x64 - x64.mean(axis=-1, keepdims=True)
    normed = (centered / np.sqrt(np.mean(centered * centered, axis=-1, keepdims=True) + eps)).astype(np.float32)
    return normed * weight if bias is None else normed * weight + bias


def linear(x: np.ndarray, weight: np.ndarray, bias: Optional[np.ndarray] = None) -> np.ndarray:
    # x: [n, cols] float32; weight: [rows, cols] float32; bias: [rows] -> [n, rows] float32
    y = (weight @ x.T).T  # OpenBLAS runs this orientation faster for a few rows
    return y if bias is None else y + bias


def rope(x: np.ndarray, positions: np.ndarray, spec: Rope, freq_factors: Optional[np.ndarray]) -> np.ndarray:
    """Rotate pairs of each head's first n_dims by position * scale_k * base^(-2k / n_dims) (Su et al., 2021),
    scale_k and the values' factor as kinetic.rotary derives them."""
    # x: [n, heads, head_dim] float32; positions: [n] int; freq_factors: [n_dims / 2] float32
    half = spec.n_dims // 2
    freqs = rotary.pair_scales(spec) * spec.base ** (-2.0 * np.arange(half) / spec.n_dims)
    if freq_factors is not None:
        freqs = freqs / freq_factors
    angles = positions.astype(np.float64)[:, None] * freqs[None, :]  # [n, half]
    factor = rotary.magnitude(spec)
    cos, sin = np.cos(angles)[:, None, :] * factor, np.sin(angles)[:, None, :] * factor
    if spec.neox:  # pairs (i, i + half)
        first, second = np.arange(half), np.arange(half) + half
    else:  # pairs (2i, 2i + 1)
        first, second = np.arange(half) * 2, np.arange(half) * 2 + 1
    out = x.astype(np.float64)
    a, b = out[..., first], out[..., second]
    out[..., first], out[..., second] = a * cos - b * sin, a * sin + b * cos
    return out.astype(np.float32)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, q_pos: np.ndarray, k_pos: np.ndarray, scale: float,
           window: Optional[int], sinks: Optional[np.ndarray] = None, causal: bool = True) -> np.ndarray:
    """Softmax attention over the positions kinetic.visibility lets each row see; query head h reads key/value
    head h // (n_head / n_head_kv); a head's sink logit joins its softmax's sum and attends to nothing."""
    # q: [n, n_head, d]; k, v: [m, n_head_kv, d]; q_pos: [n]; k_pos: [m] -> [n, n_head * d] float32
    n, n_head, d = q.shape
    n_head_kv = k.shape[1]
    grouped = q.astype(np.float64).reshape(n, n_head_kv, n_head // n_head_kv, d)
    scores = np.einsum("nhgd,mhd->hgnm", grouped, k.astype(np.float64)) * scale
    firsts, lasts = visible_spans(q_pos, window, causal, int(k_pos.max()))
    visible = (k_pos[None, :] >= firsts[:, None]) & (k_pos[None, :] <= lasts[:, None])
    scores = np.where(visible, scores, -np.inf)
    peak = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - peak)
    total = weights.sum(axis=-1, keepdims=True)
    if sinks is not None:  # sinks: [n_head] -> [n_head_kv, group, 1, 1]
        total = total + np.exp(sinks.astype(np.float64).reshape(n_head_kv, -1, 1, 1) - peak)
    weights /= total
    out = np.einsum("hgnm,mhd->nhgd", weights, v.astype(np.float64))
    return out.reshape(n, n_head * d).astype(np.float32)


def silu(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (x64 * 0.5 * (1.0 + np.tanh(x64 / 2))).astype(np.float32)  # x * sigmoid(x), without overflow


def sigmoid(x: np.ndarray) -> np.ndarray:
    return (0.5 * (1.0 + np.tanh(x.astype(np.float64) / 2))).astype(np.float32)


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), x itself above 20 as ggml cuts it."""
    x64 = x.astype(np.float64)
    return np.where(x64 > 20.0, x64, np.log1p(np.exp(np.minimum(x64, 20.0))))


def l2_norm(x: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(sum(x^2) + eps) over the last axis (llama.cpp's build_gdn_l2_norm)."""
    x64 = x.astype(np.float64)
    return (x64 / np.sqrt(np.sum(x64 * x64, axis=-1, keepdims=True) + eps)).astype(np.float32)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation (Hendrycks and Gimpel, 2016), as ggml_gelu computes it."""
    x64 = x.astype(np.float64)
    return (0.5 * x64 * (1.0 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64**3)))).astype(np.float32)


ACTIVATIONS = {"silu": silu, "gelu_tanh": gelu_tanh}
