"""drop_pages and drop_rows: the file pages of a copy or a lookup go back to the OS, whole folios of them, and
nothing else; lazy_zeros: a page is resident only once written."""

from __future__ import annotations

import mmap

import numpy as np

from kinetic_cpu.mapped_pages import FOLIO, drop_pages, drop_rows, lazy_zeros


def resident_pages(mapped) -> int:
    """Pages of the map resident in this process (mapped: the mmap, or an array over all of it): its Rss in
    /proc/self/smaps."""
    address = np.frombuffer(mapped, np.uint8).__array_interface__["data"][0]
    with open("/proc/self/smaps") as smaps:
        lines = iter(smaps)
        for line in lines:
            low = int(line.split("-")[0], 16) if "-" in line.split()[0] else None
            if low == address:
                kib = next(int(entry.split()[1]) for entry in lines if entry.startswith("Rss:"))
                return kib * 1024 // mmap.PAGESIZE
    raise AssertionError("the map is not in smaps")


FOLIO_PAGES = FOLIO // mmap.PAGESIZE


def mapped_file(tmp_path, data: np.ndarray) -> mmap.mmap:
    (tmp_path / "weights").write_bytes(data.tobytes())
    with open(tmp_path / "weights", "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def test_a_file_maps_pages_go_with_their_folios_and_its_bytes_stay(tmp_path):
    data = np.random.default_rng(0).integers(0, 256, 3 * FOLIO, np.uint8)  # three folios
    mapped = mapped_file(tmp_path, data)
    view = np.frombuffer(mapped, np.uint8).reshape(3 * FOLIO_PAGES, -1)  # a page a row
    assert view.sum() == data.sum()  # every page read in
    before = resident_pages(mapped)
    drop_pages(view[FOLIO_PAGES + 8 : FOLIO_PAGES + 40])  # inside the second folio: all of it goes
    assert resident_pages(mapped) == before - FOLIO_PAGES
    drop_pages(view[FOLIO_PAGES - 1 : FOLIO_PAGES + 1])  # across the first two: the first goes too
    assert resident_pages(mapped) == before - 2 * FOLIO_PAGES
    assert np.array_equal(view, data.reshape(view.shape))  # read again from the file


def test_looked_up_rows_give_back_their_folios_only(tmp_path):
    data = np.random.default_rng(1).integers(0, 256, 3 * FOLIO, np.uint8)
    mapped = mapped_file(tmp_path, data)
    rows = np.frombuffer(mapped, np.uint8, 6_000_000).reshape(-1, 1000)  # rows straddling pages and folios
    assert rows.sum() == data[: rows.size].sum()
    before = resident_pages(mapped)
    drop_rows(rows, np.array([5, 3, 5]))  # rows of the first folio, one twice
    assert resident_pages(mapped) == before - FOLIO_PAGES
    drop_rows(rows, np.array([FOLIO // 1000]))  # bytes 2,097,000 to 2,098,000: the first two folios
    assert resident_pages(mapped) == before - 2 * FOLIO_PAGES
    assert np.array_equal(rows, data[: rows.size].reshape(rows.shape))


def test_memory_not_in_a_file_is_left_alone():
    anonymous = mmap.mmap(-1, 16 * mmap.PAGESIZE)
    array = np.frombuffer(anonymous, np.uint8)
    array[:] = 7
    drop_pages(array)
    ordinary = np.full(16 * mmap.PAGESIZE, 7, np.uint8)
    drop_pages(ordinary)
    assert (array == 7).all() and (ordinary == 7).all()


def anonymous_kib() -> int:
    """This process's resident anonymous memory (RssAnon), which the shared zero page never counts in. (A map of
    lazy_zeros may merge with its neighbours in smaps, so its own Rss is not to be had.)"""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))


def test_lazy_zeros_take_a_page_only_once_written():
    rows, every = 16384, 16  # a page a row: 64 MiB, of which 1,024 pages (4 MiB) get written
    cache = lazy_zeros((rows, mmap.PAGESIZE // 2), np.uint16)
    assert cache.dtype == np.uint16 and cache.shape == (rows, mmap.PAGESIZE // 2) and cache.flags.writeable
    before = anonymous_kib()
    assert not cache.any()
    read = anonymous_kib()
    assert read - before < 2048  # reading the zeros took no page of its own
    cache[::every] = 5
    written_kib = (rows // every) * mmap.PAGESIZE // 1024
    assert written_kib * 3 // 4 <= anonymous_kib() - read <= written_kib * 3 // 2
    assert cache.sum() == 5 * (rows // every) * (mmap.PAGESIZE // 2)
