"""A stack's matrices by weight type, in the order a pass first reads them, and their product kernels compiled
from a few of them (kinetic_cpu.aside's split job "products")."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

import numpy as np

from kinetic.contracts.blocks import Stack, Weight
from kinetic_cpu.kernels.driver import KERNELS
from kinetic_cpu.kernels.matmul import SERIAL_BYTES, Matrix, zeros_as_activations

BATCH = 16  # rows of the batch a product is compiled for besides one (Session.warm_up's)


def kernel_types(stack: Stack) -> list[str]:
    """The weight types with a product kernel among the stack's matrices, in the order a pass first reads them."""
    return list(dict.fromkeys(weight.type.name for weight in _matrices(stack)))


def _matrices(stack: Stack) -> Iterator[Weight]:
    """The stack's matrices with a product kernel, block by block, then the output layer."""
    for weight in (*_weights(stack.blocks), stack.output):
        if len(weight.shape) == 2 and weight.type.name in KERNELS:
            yield weight


def _weights(value) -> Iterator[Weight]:
    """Every Weight in value (a block, or a tuple of them), in field order."""
    if isinstance(value, Weight):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from _weights(item)
    elif dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            yield from _weights(getattr(value, field.name))


def compile_products(path: Path, type_name: str) -> None:
    """The product kernels of a weight type compiled (or loaded from numba's cache) as the model at path runs them:
    its smallest matrix of that type on one thread, and its smallest large enough to share (matmul.SERIAL_BYTES)
    on several (the loop sharing its rows out, driver.run, which serves every type: a warming pass runs its
    products on one thread, CpuRunner.warming), times a row and a batch, with zeros as activations (the
    quantizers are the answering process's to compile)."""
    from kinetic.model import load_stack

    ours = sorted((w for w in _matrices(load_stack(path)) if w.type.name == type_name), key=_bytes)
    shared = [w for w in ours if _bytes(w) >= SERIAL_BYTES]
    for weight in {id(w): w for w in ours[:1] + shared[:1]}.values():
        matrix = Matrix(weight.raw(), weight.type.id)
        for n in (1, BATCH):
            x = np.zeros((n, matrix.k), np.float32)
            matrix(x, zeros_as_activations(matrix.activations, n, matrix.k))


def _bytes(weight: Weight) -> int:
    return weight.raw().nbytes
