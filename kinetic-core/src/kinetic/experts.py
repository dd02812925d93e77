"""Routing a mixture of experts (contracts.blocks.Experts) in numpy, as the reference and the CPU do it: each row
on its own, so a row's experts and weights do not depend on the other rows of its batch (docs/experts.md); and
gpt-oss's gated activation."""

from __future__ import annotations

import numpy as np

from kinetic.contracts.blocks import Experts

MIN_WEIGHT_SUM = 6.103515625e-5  # the smallest normal float16: llama.cpp's floor under the picked weights' sum
SWIGLU_ALPHA, SWIGLU_LIMIT = 1.702, 7.0  # gpt-oss's (llama.cpp: build_moe_ffn, LLM_FFN_SWIGLU_OAI_MOE)


def route(block: Experts, logits: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The experts each row picks, in rank order, and their weights: [n, n_used] int64 and float32.
    logits: [n, n_expert] float32, the router's; bias: the block's selection_bias as [n_expert] float32."""
    probabilities, scores = selection_scores(block, logits, bias)
    chosen = np.argsort(-scores, axis=1, kind="stable")[:, : block.n_used]  # ties: the lower expert first
    weights = np.take_along_axis(probabilities, chosen, axis=1)
    if block.gating == "softmax_weight":
        weights = _gated("softmax", weights)
    if block.normalize:
        weights = weights / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(MIN_WEIGHT_SUM))
    if block.weight_scale != 1:
        weights = weights * np.float32(block.weight_scale)
    return chosen, weights.astype(np.float32)


def selection_scores(block: Experts, logits: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The probabilities ([n, n_expert] float32) and the scores the experts are picked by (with the bias)."""
    probabilities = logits if block.gating == "softmax_weight" else _gated(block.gating, logits)
    return probabilities, probabilities if bias is None else probabilities + bias


def swiglu_oai(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """gpt-oss's gated activation, in float32 as ggml's swiglu_oai: x = min(gate, 7), y = clamp(up, -7, 7),
    x * sigmoid(1.702 x) * (y + 1)."""
    x = np.minimum(gate, np.float32(SWIGLU_LIMIT))
    y = np.clip(up, np.float32(-SWIGLU_LIMIT), np.float32(SWIGLU_LIMIT))
    return (x / (np.float32(1) + np.exp(np.float32(SWIGLU_ALPHA) * -x))) * (y + np.float32(1))


def _gated(gating: str, logits: np.ndarray) -> np.ndarray:
    # logits: [n, n_expert] float32
    if gating == "sigmoid":
        return (0.5 * (1 + np.tanh(logits / 2))).astype(np.float32)  # 1 / (1 + e^-x), without overflow
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted * (1 / shifted.sum(axis=1, keepdims=True, dtype=np.float64)).astype(np.float32)
