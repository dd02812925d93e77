"""Routing a mixture of experts (contracts.blocks.Experts) in numpy, as the reference and the CPU do it: each row
on its own, so a row's experts and weights do not depend on the other rows of its batch (docs/experts.md)."""

from __future__ import annotations

import numpy as np

from kinetic.contracts.blocks import Experts

MIN_WEIGHT_SUM = 6.103515625e-5  # the smallest normal float16: llama.cpp's floor under the picked weights' sum


def route(block: Experts, logits: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The experts each row picks, in rank order, and their weights: [n, n_used] int64 and float32.
    logits: [n, n_expert] float32, the router's; bias: the block's selection_bias as [n_expert] float32."""
    probabilities = _gated(block.gating, logits)
    scores = probabilities if bias is None else probabilities + bias
    chosen = np.argsort(-scores, axis=1, kind="stable")[:, : block.n_used]  # ties: the lower expert first
    weights = np.take_along_axis(probabilities, chosen, axis=1)
    if block.normalize:
        weights = weights / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(MIN_WEIGHT_SUM))
    if block.weight_scale != 1:
        weights = weights * np.float32(block.weight_scale)
    return chosen, weights.astype(np.float32)


def _gated(gating: str, logits: np.ndarray) -> np.ndarray:
    # logits: [n, n_expert] float32
    if gating == "sigmoid":
        return (0.5 * (1 + np.tanh(logits / 2))).astype(np.float32)  # 1 / (1 + e^-x), without overflow
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted * (1 / shifted.sum(axis=1, keepdims=True, dtype=np.float64)).astype(np.float32)
