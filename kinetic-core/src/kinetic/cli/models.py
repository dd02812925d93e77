"""`kinetic models`: the GGUF models on this computer, one line each, from their headers."""

from __future__ import annotations

from kinetic.cli.pull import size_text
from kinetic.paths import models_dir
from kinetic.stores import all_found
from kinetic.stores.described import Described, describe

NAME_WIDTH = 35  # at least; with SIZE's 10 the columns of the spec's table


def models_lines() -> list[str]:
    listed = [describe(found) for found in all_found()]
    if not listed:
        return [f"No GGUF models found: download one with kinetic pull ORG/REPO (into {models_dir()}), or run a "
                f".gguf file by its path"]
    width = max(NAME_WIDTH, max(len(model.found.name) for model in listed) + 2)
    header = f"{'NAME':<{width}}{'SIZE':>10}  {'QUANT':<10}{'ARCH':<16}{'RUNS ON KINETIC':<23} FROM"
    return [header] + [model_line(model, width) for model in listed]


def model_line(model: Described, width: int) -> str:
    return (f"{model.found.name:<{width}}{size_text(model.size):>10}  {model.quant:<10}{model.arch:<16}"
            f"{model.runs:<23} {model.found.source}").rstrip()
