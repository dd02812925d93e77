"""What a saved state is valid for: the model file's content and the engine build that computed it."""

from __future__ import annotations

import functools
import hashlib
import importlib
from pathlib import Path

HEAD_BYTES = 16 << 20


def model_identity(path: Path) -> str:
    """The file's size and a digest of its first 16 MiB (its header, tensor table and first tensors)."""
    digest = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(HEAD_BYTES))
    return digest.hexdigest()[:32]


def build_identity(runner) -> str:
    """A digest of the device, its KV cache types (-ctk, -ctv), and the source of the device package that runs
    the model and of the engine's core."""
    return _build_identity(f"{runner.device_name} {','.join(runner.cache_types)}", type(runner).__module__.split(".")[0])


@functools.lru_cache(maxsize=None)
def _build_identity(device: str, device_package: str) -> str:
    """Once per process: the code that runs is the code imported, whatever changes on disk later."""
    digest = hashlib.sha256(device.encode())
    for package in (device_package, "kinetic"):
        root = Path(importlib.import_module(package).__file__).parent
        for source in sorted(root.rglob("*.py")):
            digest.update(source.relative_to(root).as_posix().encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()[:32]
