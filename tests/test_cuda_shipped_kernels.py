"""The shipped CUDA kernels (kinetic_cuda/kernels/built, scripts/build_cuda_kernels.py): built from today's
sources, intact, the right file for each chip, and the order module() loads them in, NVRTC last. No GPU needed:
the loading order runs against a stand-in for CuPy."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import types

import pytest

from kinetic_cuda import module


def test_the_shipped_build_is_of_todays_sources():
    stamp = json.loads((module.BUILT / module.STAMP).read_text())
    assert stamp["sources"] == module.source_digest(), "a kernel changed: run scripts/build_cuda_kernels.py"
    for name, digest in stamp["files"].items():
        assert hashlib.sha256((module.BUILT / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("capability, files", [
    (80, ["sm_80.cubin", "compute_80.ptx"]),
    (86, ["sm_80.cubin", "compute_80.ptx"]),
    (89, ["sm_80.cubin", "compute_80.ptx"]),
    (90, ["sm_90.cubin", "compute_80.ptx"]),
    (100, ["sm_100.cubin", "compute_80.ptx"]),
    (103, ["sm_100.cubin", "compute_80.ptx"]),
    (120, ["sm_120.cubin", "compute_80.ptx"]),
    (110, ["compute_80.ptx"]),  # no cubin of that major: the driver compiles the PTX
    (75, []),  # older than every file
])
def test_each_chip_loads_its_own_cubin_then_the_ptx(capability, files):
    assert [path.name for path in module.shipped(capability)] == files


@pytest.fixture
def built_copy(tmp_path):
    folder = tmp_path / "built"
    shutil.copytree(module.BUILT, folder)
    return folder


def test_a_stale_stamp_ships_nothing(built_copy):
    stamp = json.loads((built_copy / module.STAMP).read_text())
    stamp["sources"] = "0" * 64
    (built_copy / module.STAMP).write_text(json.dumps(stamp))
    assert module.shipped(90, built_copy) == []


def test_a_missing_stamp_ships_nothing(built_copy):
    (built_copy / module.STAMP).unlink()
    assert module.shipped(90, built_copy) == []


def test_a_damaged_file_is_passed_over(built_copy):
    (built_copy / "sm_90.cubin").write_bytes(b"\0" * 16)
    assert [path.name for path in module.shipped(90, built_copy)] == ["compute_80.ptx"]


class DriverError(Exception):
    pass


def fake_cupy(refused: set[str], log: list[str]):
    """A stand-in for CuPy: a 9.0 chip whose driver refuses the files named in refused."""

    class RawModule:
        def __init__(self, path=None, code=None, options=()):
            self.what = f"load {path.rsplit('/', 1)[-1]}" if path else "nvrtc"

        def compile(self):
            log.append(self.what)
            if self.what.removeprefix("load ") in refused:
                raise DriverError("CUDA_ERROR_NO_BINARY_FOR_GPU")

    cuda = types.SimpleNamespace(Device=lambda index: types.SimpleNamespace(compute_capability="90"),
                                 driver=types.SimpleNamespace(CUDADriverError=DriverError))
    return types.SimpleNamespace(RawModule=RawModule, cuda=cuda)


def loaded_afresh():
    """module() run again, not from its cache, and forgotten after: the real one loads on a real GPU."""
    module.module.cache_clear()
    try:
        module.module()
    finally:
        module.module.cache_clear()


@pytest.mark.parametrize("refused, loads", [
    (set(), ["load sm_90.cubin"]),
    ({"sm_90.cubin"}, ["load sm_90.cubin", "load compute_80.ptx"]),
    ({"sm_90.cubin", "compute_80.ptx"}, ["load sm_90.cubin", "load compute_80.ptx", "nvrtc"]),
])
def test_module_loads_the_best_file_the_driver_takes_and_compiles_last(monkeypatch, refused, loads):
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(refused, log))
    loaded_afresh()
    assert log == loads


def test_module_compiles_when_nothing_is_shipped(monkeypatch):
    log: list[str] = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(set(), log))
    monkeypatch.setattr(module, "shipped", lambda capability: [])
    loaded_afresh()
    assert log == ["nvrtc"]
