"""Typed access to a model file for families: `{arch}.*` hyper-parameters and tensors as Weights.

The loader remembers which tensors a family mapped; finish() refuses a file holding any tensor the
family did not map, so nothing in a file is ever skipped silently.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from kinetic.contracts.blocks import Weight
from kinetic.contracts.model_file import ModelFile
from kinetic.errors import ModelFileError

REQUIRED = object()  # hp()'s default when the key must be present

_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array"}


class Loader:
    """What a Family's build() reads its file through."""

    def __init__(self, model: ModelFile):
        self.model = model
        self.arch = model.architecture
        self._used: set[str] = set()

    def hp(self, key: str, type: Any, default: Any = REQUIRED) -> Any:
        """The value of `{arch}.{key}` as `type` (bool, int, float, str, list or a tuple of them)."""
        full = f"{self.arch}.{key}"
        value = self.model.metadata.get(full)
        if value is None:
            if default is REQUIRED:
                raise ModelFileError(f"metadata key {full} is missing")
            return default
        kinds = type if isinstance(type, tuple) else (type,)
        for kind in kinds:
            typed = _as(value, kind)
            if typed is not None:
                return typed
        expected = " or ".join(_KINDS[kind] for kind in kinds)
        raise ModelFileError(f"metadata key {full} should be {expected}, not {_describe(value)}")

    def weight(self, name: str, shape: Optional[tuple[Optional[int], ...]] = None) -> Weight:
        """A required tensor; a given shape is checked in numpy order ([rows, row length]), None matching any size."""
        if name not in self.model.tensors:
            raise ModelFileError(f"tensor {name} is missing")
        weight = Weight(self.model, name)
        if shape is not None and not _fits(weight.shape, shape):
            expected = ["any" if n is None else n for n in shape]
            raise ModelFileError(f"tensor {name} has shape {list(weight.shape)}, expected {expected}")
        self._used.add(name)
        return weight

    def optional(self, name: str, shape: Optional[tuple[Optional[int], ...]] = None) -> Optional[Weight]:
        return self.weight(name, shape) if name in self.model.tensors else None

    def refuse(self, name: str) -> None:
        """Refuse the file if it holds `name`: a layout llama.cpp accepts that the family does not map yet."""
        if name in self.model.tensors:
            raise unsupported_tensor(name)

    def leave(self, prefix: str) -> None:
        """Accept the tensors whose names start with prefix and map none of them, as llama.cpp leaves them."""
        self._used.update(name for name in self.model.tensors if name.startswith(prefix))

    def finish(self) -> None:
        """Refuse the file if it holds a tensor the family did not map."""
        for name in self.model.tensors:
            if name not in self._used:
                raise unsupported_tensor(name)


def unsupported_tensor(name: str) -> ModelFileError:
    return ModelFileError(f"tensor {name} is not supported yet")


def _fits(actual: tuple[int, ...], expected: tuple[Optional[int], ...]) -> bool:
    return len(actual) == len(expected) and all(e is None or a == e for a, e in zip(actual, expected))


def _as(value: Any, kind: type) -> Any:
    """value converted to kind, or None when it is not of that kind."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value) if kind is bool else None
    if isinstance(value, (int, np.integer)):
        return kind(value) if kind in (int, float) else None
    if isinstance(value, (float, np.floating)):
        return float(value) if kind is float else None
    if isinstance(value, str):
        return value if kind is str else None
    if kind is list and not isinstance(value, (bytes, dict)):
        return value.tolist() if isinstance(value, np.ndarray) else list(value)
    return None


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray) or (not isinstance(value, (str, bytes)) and hasattr(value, "__len__")):
        return f"an array of {len(value)}"
    return repr(value)
