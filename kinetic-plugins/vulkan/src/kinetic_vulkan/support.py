"""What the Vulkan device can run, decided from the Stack alone (no wgpu): the refusal upload() gives."""

from __future__ import annotations

from typing import Optional

from kinetic.contracts.blocks import Attention, GatedFeedForward, RmsNorm, Stack, Weight

TITLE = "Vulkan"  # how messages name the device
MAX_HEAD_DIM = 256  # attention.wgsl keeps a head's query in workgroup memory, 4 dims a thread


def matrices(stack: Stack) -> list[Weight]:
    """Every matrix the device keeps: the embedding (looked up on the GPU), then those it multiplies by."""
    out = [stack.embedding, stack.output]
    for block in stack.mixers():
        out += [block.q, block.k, block.v, block.o] if isinstance(block, Attention) else \
            [block.gate, block.up, block.down]
    return out


def refusal(stack: Stack) -> Optional[str]:
    """None if the device runs every block and weight of the stack, else one line saying what it lacks."""
    if not stack.causal or not isinstance(stack.output_norm, RmsNorm) or stack.embedding_norm is not None:
        return "Vulkan has no kernels for encoders (bidirectional attention, LayerNorm) yet"
    if stack.input is not None:
        return "Vulkan has no kernel for a prediction block's input yet"
    for block in stack.blocks:
        reason = _block_refusal(block)
        if reason:
            return reason
    for weight in matrices(stack):
        if weight.shape[-1] % 32:
            return f"Vulkan needs rows of whole 32-weight chunks ({weight.name} has rows of {weight.shape[-1]})"
    return None


def _block_refusal(block) -> Optional[str]:
    if not isinstance(block, (Attention, GatedFeedForward)):
        return f"Vulkan has no kernel for {type(block).__name__} blocks yet"
    if not isinstance(block.norm, (RmsNorm, type(None))) or block.residual_norm is not None:
        return "Vulkan has no LayerNorm kernel yet"
    if isinstance(block, GatedFeedForward):
        return "Vulkan has no kernel for feed-forwards without a gate yet" if block.gate is None else None
    if block.output_gate or block.sinks is not None:
        return "Vulkan has no attention kernel for gated outputs or sinks yet"
    if block.head_dim > MAX_HEAD_DIM or block.head_dim % 2 or block.rope.n_dims % 2 or block.n_head % block.n_head_kv:
        return f"Vulkan has no attention kernel for heads of {block.head_dim} ({block.n_head} heads, " \
               f"{block.n_head_kv} KV heads, {block.rope.n_dims} rotated)"
    return None
