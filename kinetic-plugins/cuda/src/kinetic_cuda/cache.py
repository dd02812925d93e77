"""An attention block's keys or values on the GPU, of either cache type (-ctk, -ctv): f16 or q8_0.

f16: [context, width] float16 bits (uint16). q8_0: [context * width * 17 / 16] bytes in two planes, the int8
quants [context, width] and then each 32 quants' float16 scale [context, width / 32] (kernels/attention.cu), so
that every load is aligned."""

from __future__ import annotations

import cupy
import numpy as np


def bytes_per_token(cache_type: str, width: int) -> int:
    return width * 17 // 16 if cache_type == "q8_0" else 2 * width


def new_cache(cache_type: str, context: int, width: int) -> cupy.ndarray:
    if cache_type == "q8_0":
        return cupy.zeros(context * bytes_per_token(cache_type, width), cupy.uint8)
    return cupy.zeros((context, width), cupy.uint16)


def positions(cache: cupy.ndarray, cache_type: str, width: int) -> int:
    """The context a cache holds."""
    return len(cache) // bytes_per_token(cache_type, width) if cache_type == "q8_0" else len(cache)


def _parts(cache: cupy.ndarray, cache_type: str, n: int, width: int) -> list[cupy.ndarray]:
    """The views of cache that hold its first n positions, as bytes or float16 bits."""
    if cache_type != "q8_0":
        return [cache[:n]]
    plane = positions(cache, cache_type, width) * width
    return [cache[: n * width], cache[plane : plane + n * width // 16]]


def held(cache: cupy.ndarray, cache_type: str, n: int, width: int, stream) -> list[bytes]:
    """The bytes of its first n positions (on the stream, not yet synchronized)."""
    return [part.get(stream=stream).tobytes() for part in _parts(cache, cache_type, n, width)]


def put(cache: cupy.ndarray, cache_type: str, n: int, width: int, blob: bytes, at: int, stream) -> int:
    """Its first n positions from blob's bytes at `at`, as held() gave them; -> where they end."""
    for part in _parts(cache, cache_type, n, width):
        size = part.size * part.itemsize
        part.set(np.frombuffer(blob, part.dtype, part.size, at).reshape(part.shape), stream=stream)
        at += size
    return at
