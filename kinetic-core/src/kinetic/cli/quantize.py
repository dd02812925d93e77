"""kinetic quantize: a model file written in another type, as llama-quantize writes it without an importance
matrix (the model format's quantize; GGUF's is kinetic_formats.quantize)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from kinetic import progress
from kinetic.cli.usage import UsageError
from kinetic.errors import KineticError
from kinetic.model.load import open_model
from kinetic.plugins import plugins


def quantize_command(source: Path, out: Path, target: str, threads: Optional[int]) -> None:
    model_format = plugins().model_formats[open_model(source).format]
    targets = model_format.quantize_targets
    wanted = target.upper()
    if wanted not in targets:
        raise UsageError(f"TYPE must be one of {', '.join(targets) or 'nothing for this format'}, not {target}")
    if out.exists() and out.resolve() == Path(source).resolve():
        raise KineticError("give the output another name than the model file")
    if threads is not None:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    started = time.perf_counter()
    with _progress() as told:
        model_format.quantize(Path(source), out, wanted, told)
    size = out.stat().st_size / (1 << 30)
    print(f"wrote {out} ({wanted}, {size:.2f} GiB) in {time.perf_counter() - started:.1f} s")


@contextmanager
def _progress() -> Iterator[Callable[[int, int, str, str], None]]:
    """A progress bar of the tensors on a terminal (tqdm), nothing otherwise."""
    with progress.bar(None, unit="tensor") as shown:
        def told(i: int, n: int, name: str, type_name: str) -> None:
            shown.total = n
            shown.set_description(f"{name} -> {type_name}", refresh=False)
            shown.update(1)

        yield told
