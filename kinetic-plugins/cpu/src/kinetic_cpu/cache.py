"""A conversation's KV cache on the CPU, of either cache type (-ctk, -ctv): f16 or q8_0, and its short
convolutions' kept rows."""

from __future__ import annotations

import numba
import numpy as np

from typing import Callable

from kinetic.contracts.blocks import Attention, ShortConv, Stack
from kinetic.contracts.device import state_blob, state_magic, state_tokens
from kinetic.errors import KineticError
from kinetic.recurrent import RecurrentStates, cut, has_recurrent
from kinetic_cpu import ops
from kinetic_cpu.kernels.attention import KEY_BLOCK, Q8_BYTES, Q8_VALUES
from kinetic_cpu.mapped_pages import lazy_zeros

STATE_MAGIC = b"KCPU-KV2"


def width(cache_type: str, head_dim: int) -> int:
    """Elements a position's row of one KV head takes: head_dim float16, or its q8_0 blocks' bytes."""
    return head_dim // Q8_VALUES * Q8_BYTES if cache_type == "q8_0" else head_dim


def _dtype(cache_type: str) -> type:
    """What the cache keeps, in memory and in a saved state: float16 bits (uint16), or q8_0 bytes (int8)."""
    return np.int8 if cache_type == "q8_0" else np.uint16


def stored(x: np.ndarray, cache_type: str) -> np.ndarray:
    """x ([n, n_kv, head_dim] float32) as the cache keeps it: rounded to float16, or as q8_0 blocks."""
    return quantize_q8_0(x) if cache_type == "q8_0" else ops.half_bits_of(x)


def quantize_q8_0(x: np.ndarray) -> np.ndarray:
    """x ([..., head_dim] float32, head_dim a multiple of 32) as ggml's block_q8_0 bytes [..., head_dim / 32 * 34]:
    per 32 values the float16 of d = amax / 127, then the 32 int8 round(x / d), as quantize_row_q8_0_ref."""
    rows = np.ascontiguousarray(x, np.float32).reshape(-1, Q8_VALUES)
    scales, quants = _q8_0_blocks(rows)
    out = np.empty((len(rows), Q8_BYTES), np.int8)
    out[:, :2] = scales.astype(np.float16).view(np.int8).reshape(-1, 2)
    out[:, 2:] = quants
    return out.reshape(x.shape[:-1] + (-1,))


@numba.njit(cache=True, nogil=True)
def _q8_0_blocks(rows):  # rows: [blocks, 32] float32 -> (d [blocks] float32, q [blocks, 32] int8)
    """Each block's scale d = amax / 127 and quants round(x * (1 / d)), halves away from zero, in float32."""
    scales, quants = np.empty(len(rows), np.float32), np.empty(rows.shape, np.int8)
    for b in range(len(rows)):
        amax = np.float32(0.0)
        for j in range(Q8_VALUES):
            amax = max(amax, abs(rows[b, j]))
        d = amax / np.float32(127.0)
        inverse = np.float32(1.0) / d if d != 0 else np.float32(0.0)
        scales[b] = d
        for j in range(Q8_VALUES):
            scaled = np.float64(rows[b, j] * inverse)  # the float32 product, then rounded exactly in float64
            quants[b, j] = np.int8(np.sign(scaled) * np.floor(abs(scaled) + 0.5))
    return scales, quants


def conv_rows(stack: Stack, context_length: int) -> list[np.ndarray]:
    """Each convolution's input rows, a row per position ([context, channels] float32). A position's row is
    written before any row reads it (kernels/short_conv.py), so a finished sequence's rows serve the next as
    they are, which spares touching fresh memory (hundreds of kilobytes a token for a hybrid model)."""
    return [lazy_zeros((context_length, b.conv.shape[0]), np.float32) for b in stack.mixers() if isinstance(b, ShortConv)]


class CpuSequence:
    """One conversation's keys [n_head_kv, blocks, width, KEY_BLOCK] (position p in block p // KEY_BLOCK, column
    p % KEY_BLOCK: kernels/attention.py) and values [context, n_head_kv, width] per attention block. An f16
    cache keeps float16 values (their bits, uint16), as llama.cpp's default float16 cache does; a q8_0 cache
    keeps each position's q8_0 blocks' bytes (int8), a position's key column or value row holding them as ggml's
    block_q8_0 does. Each short convolution keeps its
    input rows [context, n_embd] float32, position by position, so that the sequence truncates exactly; each
    Mamba-2 or Gated DeltaNet mixer its state, its convolution's last rows with it (kinetic.recurrent), which
    a cut between kept states computes again through `replay`(sequence, tokens, first position)."""

    def __init__(self, stack: Stack, context_length: int, cache_types: tuple[str, str],
                 replay: Callable[["CpuSequence", np.ndarray, int], None], rows: list[np.ndarray]):
        attentions = [b for b in stack.mixers() if isinstance(b, Attention)]
        blocks = -(-context_length // KEY_BLOCK)
        self.cache_types = key_type, value_type = cache_types
        self.keys = [lazy_zeros((a.n_head_kv, blocks, width(key_type, a.head_dim), KEY_BLOCK), _dtype(key_type))
                     for a in attentions]
        self.values = [lazy_zeros((context_length, a.n_head_kv, width(value_type, a.head_dim)), _dtype(value_type))
                       for a in attentions]
        self.addresses = ops.cache_addresses(zip(self.keys, self.values))  # [layers, 2], for ops.attend
        self.conv_rows = rows  # conv_rows(stack, context_length), or an earlier sequence's
        self.token_bytes = sum(k[:, 0, :, 0].nbytes + v[0].nbytes for k, v in zip(self.keys, self.values))
        self.token_bytes += sum(r[0].nbytes for r in rows)  # what a position takes, here and in a saved state
        self.recurrent = RecurrentStates(stack, context_length, self.token_bytes, in_place=True) \
            if has_recurrent(stack) else None
        self._replay = replay
        self.context_length = context_length
        self.n_tokens = 0
        self.hidden: dict[int, np.ndarray] = {}  # position -> hidden state after the output norm (Row.hidden)

    def truncate(self, n: int) -> None:
        cut(self, n, self._replay)

    def save(self) -> bytes:
        """n_tokens, then each layer's keys [n_head_kv, width, n] and values [n, n_head_kv, width] as the
        cache holds them, then each short convolution's rows [n, n_embd]: exact."""
        n = self.n_tokens
        parts = []
        for keys, values in zip(self.keys, self.values):
            by_position = keys.transpose(0, 2, 1, 3).reshape(keys.shape[0], keys.shape[2], -1)[:, :, :n]
            parts += [by_position.tobytes(), values[:n].tobytes()]
        parts += [rows[:n].tobytes() for rows in self.conv_rows]
        parts += self.recurrent.parts(n) if self.recurrent is not None else []
        return state_blob(state_magic(STATE_MAGIC, self.cache_types), n, parts)

    def restore(self, blob: bytes) -> None:
        """The state save() gave; a KineticError if blob is not one of this model's with these cache types."""
        n, head = state_tokens(blob, state_magic(STATE_MAGIC, self.cache_types), "CPU")
        states = self.recurrent.saved_bytes(n) if self.recurrent is not None else 0
        if not 0 <= n <= self.context_length or len(blob) != head + n * self.token_bytes + states:
            raise KineticError("the saved state does not fit this model and context")
        at = head
        for keys, values in zip(self.keys, self.values):
            count = n * keys[:, 0, :, 0].size
            by_position = np.frombuffer(blob, keys.dtype, count, at).reshape(keys.shape[0], keys.shape[2], n)
            for p in range(0, n, KEY_BLOCK):  # position block by block
                span = min(KEY_BLOCK, n - p)
                keys[:, p // KEY_BLOCK, :, :span] = by_position[:, :, p : p + span]
            at += by_position.nbytes
            values[:n] = np.frombuffer(blob, values.dtype, n * values[0].size, at).reshape((n,) + values.shape[1:])
            at += values[:n].nbytes
        for rows in self.conv_rows:
            rows[:n] = np.frombuffer(blob, np.float32, n * rows.shape[1], at).reshape(n, -1)
            at += rows[:n].nbytes
        if self.recurrent is not None:
            self.recurrent.load(blob, at, n)
        self.n_tokens = n
