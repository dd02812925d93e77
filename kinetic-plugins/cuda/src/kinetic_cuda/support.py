"""What the CUDA device can run, decided from the Stack alone (no CuPy): the refusal upload() gives."""

from __future__ import annotations

from typing import Optional

from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, Mamba2, ShortConv, Stack,
                                      Weight)
from kinetic.recurrent import RECURRENT, state_shape

TITLE = "CUDA"  # how messages name the device
QUANTIZED = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K", "MXFP4")  # against int8 activations
FLOATS = ("F32", "F16", "BF16")  # against float32 activations
MAX_HEAD_DIM = 256  # one attention thread block per (row, head) holds a head's query
MAX_STATE_WIDTH = 256  # a recurrent scan holds a state's column in a warp's registers, 8 values a lane
MAX_EXPERTS = 512  # experts.cu: group_pairs counts each expert's pairs in shared memory arrays of this size


def matrices(stack: Stack) -> list[Weight]:
    """Every matrix the device multiplies by, the embedding (looked up by rows) included."""
    out = [stack.embedding, stack.output] + ([stack.input.eh_proj] if stack.input is not None else [])
    for block in stack.mixers():
        if isinstance(block, Attention):
            out += [block.q, block.k, block.v, block.o]
        elif isinstance(block, GatedFeedForward):
            out += [block.gate, block.up, block.down]
        elif isinstance(block, Experts):
            shared = block.shared
            out += [block.router, block.gate, block.up, block.down]
            out += [shared.gate, shared.up, shared.down] if shared is not None else []
            out += [block.shared_gate] if block.shared_gate is not None else []
        elif isinstance(block, (ShortConv, Mamba2)):
            out += [block.in_proj, block.out_proj]
        elif isinstance(block, GatedDeltaNet):
            out += [block.qkv_proj, block.gate_proj, block.beta_proj, block.alpha_proj, block.out_proj]
    return out


def refusal(stack: Stack) -> Optional[str]:
    """None if the device runs every block and weight of the stack, else one line saying what it lacks."""
    if not stack.causal or stack.output_norm is None or stack.embedding_norm is not None:
        return "CUDA has no kernels for encoders (bidirectional attention, LayerNorm) yet"
    for block in stack.mixers():
        if not isinstance(block, (Attention, GatedFeedForward, Experts, ShortConv, *RECURRENT)):
            return f"CUDA has no kernel for {type(block).__name__} blocks"
        if isinstance(block, Experts) and block.n_expert > MAX_EXPERTS:
            return f"CUDA has no routing kernel for more than {MAX_EXPERTS} experts ({block.n_expert})"
        if isinstance(block, RECURRENT) and state_shape(block)[1] > MAX_STATE_WIDTH:
            return f"CUDA has no {type(block).__name__} kernel for state columns of {state_shape(block)[1]}"
        if isinstance(block, Attention):
            heads_fit = block.head_dim <= MAX_HEAD_DIM and block.head_dim % 8 == 0  # 8 keys a load
            if not heads_fit or block.rope.n_dims % 2 or block.n_head % block.n_head_kv:
                return f"CUDA has no attention kernel for heads of {block.head_dim} ({block.n_head} heads, " \
                       f"{block.n_head_kv} KV heads, {block.rope.n_dims} rotated)"
    for weight in matrices(stack):
        name = weight.type.name
        if name not in QUANTIZED + FLOATS:
            return f"CUDA has no kernel for {name} weights ({weight.name})"
        if weight.shape[-1] % 32:
            return f"CUDA needs rows of whole 32-weight chunks ({weight.name} has rows of {weight.shape[-1]})"
        if weight.raw().shape[-1] % 2:  # MXFP4's 17-byte blocks: the kernels copy rows in 2-byte units
            return f"CUDA needs rows of an even number of bytes ({weight.name}: {weight.raw().shape[-1]})"
    return None
