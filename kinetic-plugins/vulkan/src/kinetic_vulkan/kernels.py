"""The WGSL shaders (shaders/*.wgsl) compiled into compute pipelines, once per set of override constants, timed.

Each shader is preceded by run.wgsl; a matrix product's is matmul.wgsl with its float type's `dequantize`, or
matmul_q8.wgsl with its quantized type's `chunk` (shaders/quants/<type>.wgsl), and an embedding lookup's embed.wgsl
or embed_q8.wgsl likewise.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any, Optional

from kinetic.progress import CompileClock

CLOCK = CompileClock("compiling Vulkan shaders")  # the driver may keep its own cache across processes
# what shaders include: the matrix products' rows.wgsl, the embedding lookups' embed_rows.wgsl, the quantized types'
# chunks.wgsl, attention's splits.wgsl, and int8.wgsl where a shader quantizes its output
INCLUDES = {"matmul": ("rows",), "matmul_q8": ("rows", "chunks"), "embed": ("embed_rows",),
            "embed_q8": ("embed_rows", "chunks"), "quantize": ("int8",), "norm": ("int8",), "gate": ("int8",),
            "attention": ("splits",), "combine": ("splits", "int8")}


@lru_cache(maxsize=None)
def source(name: str, weight_type: Optional[str] = None) -> str:
    """run.wgsl (the pass's counts), the shader, a matrix product's weight type's dequantize or chunk, and the
    functions the shader includes."""
    folder = resources.files("kinetic_vulkan") / "shaders"
    parts = [folder / "run.wgsl", folder / f"{name}.wgsl"] + ([folder / "quants" / f"{weight_type}.wgsl"]
                                                              if weight_type else [])
    parts += [folder / f"{include}.wgsl" for include in INCLUDES.get(name, ())]
    return "".join(part.read_text() for part in parts)


@lru_cache(maxsize=None)
def _module(device: Any, name: str, weight_type: Optional[str]):
    return device.create_shader_module(label=f"{name} {weight_type or ''}", code=source(name, weight_type))


@lru_cache(maxsize=None)
def _pipeline(device: Any, name: str, weight_type: Optional[str], constants: tuple[tuple[str, float], ...]):
    with CLOCK.during():
        stage = {"module": _module(device, name, weight_type), "entry_point": "main", "constants": dict(constants)}
        shape = " {ROWS:.0f}x{K:.0f}".format(**dict(constants)) if weight_type else ""  # a product's matrix
        return device.create_compute_pipeline(label=f"{name} {weight_type or ''}".strip() + shape, layout="auto",
                                              compute=stage)


def pipeline(device: Any, name: str, weight_type: Optional[str] = None, **constants: float):
    """The pipeline of shader `name` with these override constants (booleans as 0 or 1)."""
    return _pipeline(device, name, weight_type, tuple(sorted((k, float(v)) for k, v in constants.items())))

