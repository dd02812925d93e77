"""How the quants of each block type unpack: IR builders that give them as unsigned bytes in weight order.

Offsets (q - 8, q - 32, ...) and scales stay with the kernels. Layouts as in ggml-common.h (and the
reference dequantizers in kinetic_formats.types).
"""

from __future__ import annotations

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.bitfields import bit_lanes, concat, field


def nibble_block(qs_at: int, qh_at: int | None = None):
    """Q4_0/Q4_1 (qh_at None) and Q5_0/Q5_1: 32 weights, 16 low nibbles then 16 high nibbles, and for the
    5-bit types bit j of the little-endian u32 at qh_at as weight j's fifth bit.
    -> build(builder, block i8*) -> <32 x i8>"""

    def build(builder, block):
        packed = ir.load_bytes(builder, block, qs_at, 16)
        q = concat(builder, field(builder, packed, 4, 0), field(builder, packed, 4, 1))
        if qh_at is not None:
            high = bit_lanes(builder, block, qh_at, 0, 32)
            q = builder.or_(q, builder.shl(high, ir.const(high.type, 4)))
        return q

    return build


def _chunk(c: int, bits: int, run: int) -> tuple[int, int]:
    """Where weights 32c..32c+31 lie when a run of `run` bytes holds field 0 of every byte, then field 1, ...:
    (byte offset of the first, field index)."""
    run_index, within = divmod(32 * c, run * 8 // bits)
    field_index, byte = divmod(within, run)
    return run_index * run + byte, field_index


def _bits(builder, block, c: int, layout: tuple[int, int, int]):
    at, bits, run = layout
    byte, index = _chunk(c, bits, run)
    return field(builder, ir.load_bytes(builder, block, at + byte, 32), bits, index)


def k_chunks(low: tuple[int, int, int], high: tuple[int, int, int] | None = None):
    """A K-quant super-block of 256 weights from low bits and optional high bits, each given as
    (byte offset, bits per field, run length in bytes).
    -> chunk(builder, block i8*, c) -> <32 x i8>, weights 32c .. 32c + 31"""

    def chunk(builder, block, c: int):
        q = _bits(builder, block, c, low)
        if high is not None:
            q = builder.or_(q, builder.shl(_bits(builder, block, c, high), ir.const(q.type, low[1])))
        return q

    return chunk
