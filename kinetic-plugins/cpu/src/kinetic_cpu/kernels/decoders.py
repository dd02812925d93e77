"""How the quants of each block type unpack: IR builders that give them as unsigned bytes in weight order, and
4-bit codes as the values of their table (looked_up).

Offsets (q - 8, q - 32, ...) and scales stay with the kernels. Layouts as in ggml-common.h (and the
reference dequantizers in kinetic_formats.types).
"""

from __future__ import annotations

from llvmlite import ir as llvm

from kinetic_cpu.kernels import ir
from kinetic_cpu.kernels.bitfields import bit_lanes, concat, field

# bytes a vector holds -> (the CPU feature its pshufb needs, that pshufb)
PSHUFB = {16: ("ssse3", "llvm.x86.ssse3.pshuf.b.128"), 32: ("avx2", "llvm.x86.avx2.pshuf.b"),
          64: ("avx512bw", "llvm.x86.avx512.pshuf.b.512")}
# ggml-common.h's kvalues_iq4nl, and kvalues_mxfp4 (e2m1 values doubled), as kinetic_formats.types.grids has them
IQ4_NL_TABLE = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
MXFP4_TABLE = (0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12)


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


def looked_up(builder, codes, table: tuple[int, ...]):
    """<n x i8> table[codes] for 4-bit codes (<n x i8>, 0 to 15) and a table of 16 int8 values (IQ4_NL's,
    MXFP4's): one pshufb (Intel SDM: PSHUFB) per vector where the CPU has it, else a select per entry."""
    n = codes.type.count
    feature, pshufb = PSHUFB.get(n, ("", ""))
    if feature and ir.host_has(feature):
        lanes = llvm.Constant(codes.type, [table[i % 16] for i in range(n)])  # the table in every 16 bytes
        return ir.call_intrinsic(builder, pshufb, codes.type, lanes, codes)
    values = ir.const(codes.type, table[0])
    for code in range(1, 16):
        hit = builder.icmp_unsigned("==", codes, ir.const(codes.type, code))
        values = builder.select(hit, ir.const(codes.type, table[code]), values)
    return values
