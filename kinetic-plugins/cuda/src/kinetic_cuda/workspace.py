"""Scratch buffers of one forward pass of up to max_rows rows, made once at upload, so a pass allocates
nothing and a CUDA graph of it can be captured and replayed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import cupy

from kinetic.contracts.blocks import (Attention, Experts, GatedDeltaNet, GatedFeedForward, Mamba2, Mixer, ShortConv,
                                      Stack)
from kinetic.recurrent import RECURRENT, tail_shape

SCORES_BYTES = 1 << 30  # attention scores scratch; fewer rows per pass where long contexts need it
MAX_ROWS = 512
TILE_PAIRS = 64  # grouped (row, rank) pairs a tile holds: matmul.cu's MMA_TOKENS


@dataclass(frozen=True)
class Shape:
    """The widths a stack's passes need."""

    n_embd: int
    n_vocab: int
    q_width: int  # widest n_head * head_dim
    kv_width: int  # widest n_head_kv * head_dim
    n_ff: int  # widest feed-forward, or short convolution's b, c, u (3 n_embd), whichever is wider
    n_head: int
    conv_widths: tuple[int, ...] = ()  # each short convolution's kept row of float32 per position, in block order
    mix_width: int = 0  # the widest of the mix buffers' carvings (mix_widths)
    window: tuple[int, int] = (0, 0)  # the recurrent convolutions' most kept rows (width - 1) and channels
    input_width: int = 0  # a prediction block's input's (PredictionInput: 2 n_embd)
    experts: tuple[int, int, int] = (0, 0, 0)  # the most experts, experts a row uses, and an expert's width

    @staticmethod
    def of(stack: Stack) -> "Shape":
        mixers = stack.mixers()
        attentions = [b for b in mixers if isinstance(b, Attention)]
        experts = [b for b in mixers if isinstance(b, Experts)]
        feed_forwards = [b for b in mixers if isinstance(b, GatedFeedForward)] + [b.shared for b in experts if b.shared]
        widths = [b.gate.shape[0] for b in feed_forwards] + [b.in_proj.shape[0] for b in mixers
                                                             if isinstance(b, ShortConv)]
        conv_widths = tuple(b.conv.shape[0] for b in mixers if isinstance(b, ShortConv))
        tails = [tail_shape(b) for b in mixers if isinstance(b, RECURRENT)]
        return Shape(stack.n_embd, stack.n_vocab, max((a.n_head * a.head_dim for a in attentions), default=0),
                     max((a.n_head_kv * a.head_dim for a in attentions), default=0), max(widths, default=0),
                     max((a.n_head for a in attentions), default=1), conv_widths,
                     max((sum(w) for b in mixers for w in mix_widths(b)), default=0),
                     tuple(max(sizes, default=0) for sizes in zip(*tails)) if tails else (0, 0),
                     2 * stack.n_embd if stack.input is not None else 0,
                     tuple(max(sizes) for sizes in zip(*[(b.n_expert, b.n_used, b.gate.shape[1]) for b in experts]))
                     if experts else (0, 0, 0))

    @property
    def widest(self) -> int:
        return max(self.n_embd, self.q_width, self.n_ff, self.input_width)


def mix_widths(block: Mixer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The widths a block carves from the two mix buffers (Workspace.carve): its projections', then its own."""
    if isinstance(block, Mamba2):
        return (block.in_proj.shape[0],), (block.conv.shape[0], block.out_proj.shape[1])  # zvdt; conv, y
    if isinstance(block, GatedDeltaNet):
        channels, inner, heads = block.conv.shape[0], block.out_proj.shape[1], block.n_v_head
        qk = 2 * block.n_k_head * block.head_dim
        return (channels, inner, heads, heads), (channels, qk, inner)  # qkv, z, beta, alpha; conv, q and k, o
    if isinstance(block, Attention) and block.output_gate:
        width = block.n_head * block.head_dim
        return (2 * width,), (width,)  # queries and gates; gates
    return (), ()


def rows_per_pass(shape: Shape, context: int) -> int:
    return max(1, min(MAX_ROWS, SCORES_BYTES // (4 * shape.n_head * context)))


def workspace_bytes(shape: Shape, rows: int, context: int) -> int:
    floats = rows * (5 * shape.n_embd + 2 * shape.q_width + 2 * shape.kv_width + 2 * shape.n_ff + shape.n_vocab
                     + 2 * shape.mix_width + 3 * shape.input_width)
    floats += (rows + shape.window[0]) * shape.window[1] + rows
    n_expert, n_used, width = shape.experts
    pairs = rows * n_used  # a mixture's (row, rank) pairs
    floats += rows * (n_expert + 1) + pairs * (2 * width + shape.n_embd + 4) + 4 * most_tiles(pairs, n_expert)
    # Activations (ws.acts, expert_acts): a byte a value and 8 bytes a block of 32
    int8_blocks = (rows * shape.widest + pairs * width) * 5 // 4
    return 4 * floats + int8_blocks + 4 * rows * shape.n_head * context


def most_tiles(pairs: int, n_expert: int) -> int:
    """The most tiles of `pairs` (row, rank) pairs grouped by expert (ExpertGroups): each expert's last may be
    partial."""
    return -(-pairs // TILE_PAIRS) + min(n_expert, pairs)


class ExpertGroups:
    """A pass's (row, rank) pairs grouped by expert (experts.cu's group_pairs): each grouped position's pair and
    token, and the tiles of them that the grouped products take."""

    def __init__(self, rows: int, shape: Shape):
        pairs = rows * shape.experts[1]
        self.n_expert = shape.experts[0]
        self.order, self.token_of = cupy.zeros(pairs, cupy.int32), cupy.zeros(pairs, cupy.int32)
        self.tiles = cupy.zeros((most_tiles(pairs, self.n_expert), 4), cupy.int32)

    def bound(self, pairs: int) -> int:
        """The most tiles of `pairs` of this pass's pairs."""
        return most_tiles(pairs, self.n_expert)


class Activations:
    """Float32 rows quantized to int8 blocks of 32 (ops.quantize): quants, scales and sums."""

    def __init__(self, rows: int, width: int):
        self.xq = cupy.zeros(rows * width, cupy.int8)
        self.xd = cupy.zeros(rows * width // 32, cupy.float32)
        self.xs = cupy.zeros(rows * width // 32, cupy.int32)

    def after(self, rows: int, width: int) -> "Activations":
        """Views of the blocks after the first `rows` rows of `width` values: a pass's later rows."""
        later = Activations.__new__(Activations)
        later.xq, later.xd, later.xs = self.xq[rows * width :], self.xd[rows * width // 32 :], self.xs[rows * width // 32 :]
        return later


class Workspace:
    def __init__(self, shape: Shape, rows: int, context: int):
        def floats(*dims):
            return cupy.zeros(dims, cupy.float32)

        self.rows, self.context, self.max_heads = rows, context, shape.n_head
        self.x, self.h, self.y = floats(rows, shape.n_embd), floats(rows, shape.n_embd), floats(rows, shape.n_embd)
        self.q, self.att = floats(rows, shape.q_width), floats(rows, shape.q_width)
        self.k, self.v = floats(rows, shape.kv_width), floats(rows, shape.kv_width)
        self.gate, self.up = floats(rows, shape.n_ff), floats(rows, shape.n_ff)
        self.logits = floats(rows, shape.n_vocab)
        self.mix_in, self.mix = floats(rows * shape.mix_width), floats(rows * shape.mix_width)
        self.shared, self.sum = floats(rows, shape.n_embd), floats(rows, shape.n_embd)  # a Parallel's input, output
        self.sharing = None  # while a Parallel block runs its mixers: ws.shared, which those without a norm read
        self.scores = floats(rows * shape.n_head * context)
        self.acts = Activations(rows, shape.widest)
        self.inputs = cupy.zeros((3, rows), cupy.int32)  # tokens, positions, rows asking for logits
        # a recurrent convolution's tail, then a pass's rows, at these rows (ops.conv_silu's positions)
        self.lead, channels = shape.window
        self._window = floats((rows + self.lead) * channels)
        self.window_rows = cupy.arange(self.lead, self.lead + rows, dtype=cupy.int32)
        # a mixture of experts': the router's logits, each (row, rank) pair's expert, weight, products and int8 blocks
        n_expert, n_used, width = shape.experts
        self.router, self.shared_gates = floats(rows * n_expert), floats(rows)
        self.expert_ids, self.expert_weights = cupy.zeros(rows * n_used, cupy.int32), floats(rows * n_used)
        self.expert_gate, self.expert_up = floats(rows * n_used * width), floats(rows * n_used * width)
        self.expert_out = floats(rows * n_used * shape.n_embd)
        self.expert_acts = Activations(rows * n_used, width)
        self.groups = ExpertGroups(rows, shape)

    def view(self, buffer: cupy.ndarray, width: int, rows: Optional[int] = None) -> cupy.ndarray:
        """buffer's memory as a contiguous [rows, width] array (by default a pass's rows), for blocks narrower than
        the widest, or a mixture of experts' (row, rank) pairs."""
        rows = self.rows if rows is None else rows
        return buffer.ravel()[: rows * width].reshape(rows, width)

    def window(self, tail: cupy.ndarray) -> cupy.ndarray:
        """A window [lead + rows, channels] whose rows before lead end with tail ([width - 1, channels]), for a
        pass's rows at window_rows."""
        keep, channels = tail.shape
        window = self._window[: (self.lead + self.rows) * channels].reshape(-1, channels)
        window[self.lead - keep : self.lead] = tail
        return window

    def carve(self, buffer: cupy.ndarray, widths: tuple[int, ...]) -> list[cupy.ndarray]:
        """Contiguous [rows, width] arrays, one after another in buffer's memory (mix_widths)."""
        out, at = [], 0
        for width in widths:
            out.append(buffer[at : at + self.rows * width].reshape(self.rows, width))
            at += self.rows * width
        return out
