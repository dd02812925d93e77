"""`kinetic models`: the GGUF models on this computer, one line each, from their headers."""

from __future__ import annotations

from typing import Sequence

from kinetic.cli.pull import size_text
from kinetic.paths import models_dir
from kinetic.stores import all_found
from kinetic.stores.described import Described, describe

HEADER = ("NAME", "SIZE", "QUANT", "ARCH", "RUNS ON KINETIC", "FROM")
LEAST_WIDTHS = (35, 12, 10, 16, 24)  # the spec's table, gaps included


def models_lines() -> list[str]:
    listed = [describe(found) for found in all_found()]
    if not listed:
        return [f"No GGUF models found: download one with kinetic pull ORG/REPO (into {models_dir()}), or run a "
                f".gguf file by its path"]
    return table_lines([HEADER] + [cells(model) for model in listed], LEAST_WIDTHS)


def cells(model: Described) -> tuple[str, ...]:
    return model.found.name, size_text(model.size), model.quant, model.arch, model.runs, model.found.source


def table_lines(rows: Sequence[Sequence[str]], least: Sequence[int]) -> list[str]:
    """Rows of cells, the header first, in columns at least `least` wide and 2 wider than their widest cell;
    the second column (sizes) right-aligned, the last one as it is."""
    widths = [max(wide, max(len(row[i]) for row in rows) + 2) for i, wide in enumerate(least)]
    lines = []
    for row in rows:
        padded = [f"{cell:>{width - 2}}  " if i == 1 else f"{cell:<{width}}"
                  for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append(("".join(padded) + "".join(row[len(widths):])).rstrip())
    return lines
