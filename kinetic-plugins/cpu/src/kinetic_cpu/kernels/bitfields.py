"""Bit fields of byte vectors, in IR: how packed quants and scales come apart."""

from __future__ import annotations

from llvmlite import ir as llvm

from kinetic_cpu.kernels.ir import I8, const, indices, load_bytes, vector


def field(builder, v, bits: int, index: int) -> llvm.Value:
    """The index-th bits-wide field of every byte of v, lowest bits first."""
    if index:
        v = builder.lshr(v, const(v.type, bits * index))
    return builder.and_(v, const(v.type, (1 << bits) - 1)) if bits * (index + 1) < 8 else v


def bit_lanes(builder, pointer, offset: int, first: int, n: int) -> llvm.Value:
    """<n x i8> of 0/1: lane p holds bit first + p of the little-endian bytes at `offset`."""
    raw = load_bytes(builder, pointer, offset, (first + n + 7) // 8)
    spread = builder.shuffle_vector(raw, raw, indices([(first + p) // 8 for p in range(n)]))
    masks = llvm.Constant(vector(I8, n), [1 << ((first + p) % 8) for p in range(n)])
    hit = builder.icmp_unsigned("!=", builder.and_(spread, masks), const(vector(I8, n), 0))
    return builder.zext(hit, vector(I8, n))


def concat(builder, a, b) -> llvm.Value:
    return builder.shuffle_vector(a, b, indices(range(2 * a.type.count)))
