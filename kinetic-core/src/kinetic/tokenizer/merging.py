"""The merge loop BPE and SentencePiece share: repeatedly join the best adjacent pair of symbols."""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Callable, Optional


def merge_symbols(symbols: list[str], rank_of: Callable[[str], Optional[float]], joiner: str) -> list[str]:
    """Join adjacent symbols, lowest rank first and leftmost among equals, while a pair has a rank.

    A pair's rank is rank_of(left + joiner + right), None for a pair that never merges. Runs in
    O(n log n), as llama.cpp's queue does, so long runs (thousands of spaces) stay fast. The loop is
    written out flat: it is the hot path.
    """
    following = list(range(1, len(symbols))) + [-1]
    preceding = list(range(-1, len(symbols) - 1))
    heap = []
    for i in range(len(symbols) - 1):
        rank = rank_of(symbols[i] + joiner + symbols[i + 1])
        if rank is not None:
            heap.append((rank, i, i + 1, len(symbols[i]) + len(symbols[i + 1])))
    heapify(heap)
    while heap:
        _, left, right, size = heappop(heap)
        left_text, right_text = symbols[left], symbols[right]
        # a pair is stale once either side has been merged into something else
        if not left_text or not right_text or len(left_text) + len(right_text) != size:
            continue
        merged = symbols[left] = left_text + right_text
        symbols[right] = ""
        after = following[left] = following[right]
        if after >= 0:
            preceding[after] = left
            rank = rank_of(merged + joiner + symbols[after])
            if rank is not None:
                heappush(heap, (rank, left, after, len(merged) + len(symbols[after])))
        before = preceding[left]
        if before >= 0:
            rank = rank_of(symbols[before] + joiner + merged)
            if rank is not None:
                heappush(heap, (rank, before, left, len(symbols[before]) + len(merged)))
    return [s for s in symbols if s]
