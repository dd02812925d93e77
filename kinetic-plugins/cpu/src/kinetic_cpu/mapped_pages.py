"""Pages of memory: giving back those of a file map that a copy stands in for, and zeros that take a page
only once written."""

from __future__ import annotations

import mmap
from typing import Optional

import numpy as np


def drop_pages(array: np.ndarray) -> None:
    """Let the OS take back the pages of the read-only file map under `array` (a contiguous view of one)
    now that a copy serves its reads: resident memory would count both, and a later read of the array maps
    its pages again from the file. An array not in a file map is left alone (DONTNEED would zero
    anonymous memory)."""
    mapped = _file_map(array)
    if mapped is None or not array.flags.c_contiguous or not hasattr(mmap, "MADV_DONTNEED"):
        return
    start = array.__array_interface__["data"][0] - np.frombuffer(mapped, np.uint8).__array_interface__["data"][0]
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages inside the array only
    end = (start + array.nbytes) // mmap.PAGESIZE * mmap.PAGESIZE
    if end > first:
        mapped.madvise(mmap.MADV_DONTNEED, first, end - first)


def _file_map(array: np.ndarray) -> Optional[mmap.mmap]:
    """The mmap at the root of array's chain of views, if it is a file's."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    base = base.obj if isinstance(base, memoryview) else base  # np.frombuffer's
    return base if isinstance(base, mmap.mmap) and not base.closed and _of_file(base) else None


def _of_file(mapped: mmap.mmap) -> bool:
    try:
        mapped.size()  # the file's size; an anonymous map has no file and raises
    except OSError:
        return False
    return True


def lazy_zeros(shape: tuple[int, ...], dtype) -> np.ndarray:
    """Zeros on pages of an anonymous map of their own, which become resident only as they are written: a KV
    cache sized for the whole context costs what its sequence holds. (np.zeros may take memory the allocator
    recycles, and clear all of it at once.)"""
    count = int(np.prod(shape))
    pages = mmap.mmap(-1, max(1, count * np.dtype(dtype).itemsize), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(pages, dtype, count).reshape(shape)
