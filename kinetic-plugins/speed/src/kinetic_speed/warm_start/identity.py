"""What a saved state is valid for: the model file's content and the engine build that computed it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kinetic.receipt import build_id

HEAD_BYTES = 16 << 20


def model_identity(path: Path) -> str:
    """The file's size and a digest of its first 16 MiB (its header, tensor table and first tensors)."""
    digest = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(HEAD_BYTES))
    return digest.hexdigest()[:32]


def build_identity(runner) -> str:
    """A digest of the device, its KV cache types (-ctk, -ctv) and the build: every installed Kinetic package's
    source and kernels (kinetic.receipt.build_id, as receipts record it)."""
    identity = f"{runner.device_name} {','.join(runner.cache_types)} {build_id()}"
    return hashlib.sha256(identity.encode()).hexdigest()[:32]
