"""Pages of memory: giving back those of a file map that a copy stands in for, and zeros that take a page
only once written."""

from __future__ import annotations

import mmap
from typing import Optional

import numpy as np


# The page cache holds a file in folios of up to 2 MiB (a PMD), and a read fault maps every page of its folio:
# reading one tensor maps the neighbours' pages that share its first and last folios.
FOLIO = 2 << 20


def drop_pages(array: np.ndarray) -> None:
    """Let the OS take back the pages of the read-only file map under `array` (a contiguous view of one) now
    that a copy serves its reads, and those of the folios its ends share with its neighbours (they came in
    with its own, and a neighbour copied earlier would otherwise be held again): resident memory would count
    both, and a later read maps its pages again from the file. An array not in a file map is left alone
    (DONTNEED would zero anonymous memory)."""
    mapped = _file_map(array)
    if mapped is not None and array.flags.c_contiguous:
        start = _offset(array, mapped)
        _drop_folios(mapped, start // FOLIO, (start + array.nbytes - 1) // FOLIO)


def drop_rows(matrix: np.ndarray, rows: np.ndarray) -> None:  # matrix: [n_rows, row_bytes] uint8
    """drop_pages for the rows `rows` of matrix (a contiguous view of a file map) that a lookup just read: an
    embedding's rows, read a few at a time, would otherwise stay mapped a folio each."""
    mapped = _file_map(matrix)
    if mapped is None or not matrix.flags.c_contiguous:
        return
    starts = _offset(matrix, mapped) + np.asarray(rows, np.int64) * matrix.shape[1]
    folios = np.unique(np.concatenate([starts // FOLIO, (starts + matrix.shape[1] - 1) // FOLIO]))
    for folio in folios.tolist():
        _drop_folios(mapped, folio, folio)


def _drop_folios(mapped: mmap.mmap, first: int, last: int) -> None:
    """MADV_DONTNEED for folios first to last (file offsets over FOLIO: the map starts at the file's first byte)."""
    if hasattr(mmap, "MADV_DONTNEED"):
        end = min((last + 1) * FOLIO, len(mapped))
        mapped.madvise(mmap.MADV_DONTNEED, first * FOLIO, end - first * FOLIO)


def _offset(array: np.ndarray, mapped: mmap.mmap) -> int:
    return array.__array_interface__["data"][0] - np.frombuffer(mapped, np.uint8).__array_interface__["data"][0]


def in_file_map(array: np.ndarray) -> bool:
    """Whether array views a file's memory map (rather than memory of its own)."""
    return _file_map(array) is not None


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
