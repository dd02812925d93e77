"""What a model-format reader gives the core: metadata, a tensor table and raw bytes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import numpy as np

from kinetic.contracts.tensor_type import TensorType


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a model file. shape is in ggml order: shape[0] is the row length."""

    name: str
    type: TensorType
    shape: tuple[int, ...]
    offset: int  # absolute byte offset in the file
    nbytes: int

    @property
    def n_elements(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n


@dataclass
class ModelFile:
    """An opened model file; tensor bytes stay memory-mapped until read."""

    path: Path
    format: str  # "gguf", "ktc"
    version: int
    metadata: Mapping[str, Any]
    tensors: Mapping[str, TensorInfo]
    data: np.ndarray  # the whole file as a read-only uint8 memory map
    profile: Optional[dict[str, Any]] = None  # a .ktc file's execution profile (kinetic.engine.profile)

    def raw(self, name: str) -> np.ndarray:
        """The stored bytes of one tensor, zero-copy."""
        info = self.tensors[name]
        return self.data[info.offset : info.offset + info.nbytes]

    def to_float32(self, name: str) -> np.ndarray:
        """One tensor dequantized, in numpy order: [shape[-1], ..., shape[0]]."""
        info = self.tensors[name]
        return info.type.to_float32(self.raw(name), info.n_elements).reshape(info.shape[::-1])

    @property
    def architecture(self) -> str:
        return str(self.metadata.get("general.architecture", ""))

    def arch_value(self, key: str, default: Any = None) -> Any:
        """A value under the architecture's own prefix, e.g. arch_value("block_count")."""
        return self.metadata.get(f"{self.architecture}.{key}", default)


@dataclass(frozen=True)
class Verification:
    """What checking a whole model file found (kinetic verify)."""

    sections: list[tuple[str, bool]]  # each hashed section's name and whether its hash matches
    signer: Optional[str]  # the public key of the signature (hex); None for an unsigned file
    signature_holds: bool  # whether that signature is the manifest's

    @property
    def intact(self) -> bool:
        return all(ok for _, ok in self.sections) and (self.signer is None or self.signature_holds)


@dataclass(frozen=True)
class ModelFormat:
    """A reader for one kind of model file, and for a format that hashes its contents, its writer and checker."""

    name: str
    suffixes: tuple[str, ...]  # (".gguf",)
    sniff: Callable[[bytes], bool]  # the file's first 8 bytes -> is it ours
    open: Callable[[Path], ModelFile]
    # the whole file checked (kinetic verify); None for a format without hashes
    verify: Optional[Callable[[Path], Verification]] = None
    # (source, out, Ed25519 secret key or None, profile) -> writes out in this format (kinetic convert); None: none
    convert: Optional[Callable[[Path, Path, Optional[bytes], dict], None]] = None
    # (source, out, target file type, told(i, n, tensor, type)) -> out quantized (kinetic quantize); None: none
    quantize: Optional[Callable[[Path, Path, str, Callable[[int, int, str, str], None]], None]] = None
    quantize_targets: tuple[str, ...] = ()  # the file types quantize writes: "Q4_K_M", ...
