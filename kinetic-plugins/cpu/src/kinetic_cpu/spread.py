"""Attention of a shared pass's sequences spread over threads: the matrix kernels split each product's
output rows over numba's threads, but one sequence's decode or draft rows are too little attention to
split, so each sequence's attention runs whole on one thread and the sequences share out the threads.

The threads are Python threads calling the attention kernel (ops.attend releases the GIL) on one thread
each, never a numba parallel region, which the workqueue threading layer forbids running from two
threads at once. Which thread runs a sequence changes no bit (docs/exactness.md, section 1).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

import numba
import numpy as np

SHORT_SPAN = 16  # rows of one sequence up to which its attention runs whole on one thread (decode and drafts)

Spans = list[tuple[Any, slice]]  # (sequence, its rows in the pass)


class Spreader:
    """Runs work(spans, one_thread) over a pass's sequences, on several threads when each holds few rows."""

    def __init__(self):
        self._pool: Optional[ThreadPoolExecutor] = None
        self._helpers = 0

    def run(self, work: Callable[[Spans, bool], None], spans: Spans, positions: np.ndarray) -> None:
        groups = thread_groups(spans, positions, numba.get_num_threads())
        if len(groups) == 1:
            work(spans, False)
            return
        futures = [self._pool_of(len(groups) - 1).submit(work, group, True) for group in groups[1:]]
        work(groups[0], True)
        for future in futures:
            future.result()

    def _pool_of(self, helpers: int) -> ThreadPoolExecutor:
        if self._helpers < helpers:
            if self._pool is not None:
                self._pool.shutdown()
            self._pool, self._helpers = ThreadPoolExecutor(helpers, thread_name_prefix="kinetic-attention"), helpers
        return self._pool


def thread_groups(spans: Spans, positions: np.ndarray, threads: int) -> list[Spans]:
    """spans cut into up to `threads` groups of about equal attention (rows times positions seen, the
    largest first to the least loaded group); one group when a span holds more than SHORT_SPAN rows, whose
    attention numba's threads share instead."""
    if threads == 1 or len(spans) == 1 or any(span.stop - span.start > SHORT_SPAN for _, span in spans):
        return [spans]
    groups: list[Spans] = [[] for _ in range(min(threads, len(spans)))]
    loads = [0] * len(groups)

    def cost(item: tuple[Any, slice]) -> int:
        span = item[1]
        return (span.stop - span.start) * int(positions[span.stop - 1] + 1)

    for item in sorted(spans, key=cost, reverse=True):
        least = loads.index(min(loads))
        groups[least].append(item)
        loads[least] += cost(item)
    return groups
