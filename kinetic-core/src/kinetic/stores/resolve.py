"""Every model found on this computer, and a command's model argument to its file: an existing path always
wins, then a name as `kinetic models` shows it."""

from __future__ import annotations

import difflib
from pathlib import Path

from kinetic.errors import ModelNameError
from kinetic.hub.files import shows_quant
from kinetic.stores import hf_cache, kinetic_folder, llama_cache, lmstudio, ollama
from kinetic.stores.found import Found

STORES = (kinetic_folder, ollama, lmstudio, hf_cache, llama_cache)  # the order `kinetic models` lists them in
FILE_SUFFIXES = (".gguf", ".ktc")
CLOSEST = 3


def all_found() -> list[Found]:
    """The models of every store, each file once (the first store that has it names it); a store that
    cannot be read is left out."""
    found, seen = [], set()
    for store in STORES:
        try:
            listed = store.found()
        except OSError:
            continue
        for model in listed:
            if model.path.resolve() not in seen:
                seen.add(model.path.resolve())
                found.append(model)
    return found


def resolve_model(given: Path) -> Path:
    """The file given, or the one the model named so is in; a path that is not there is given back as it is
    (opening it says so) when it looks like one, else the ModelNameError names the closest names."""
    return given if looks_like_path(given) else named(str(given), all_found()).path


def looks_like_path(given: Path) -> bool:
    """Whether given is a path (there, or written as one: a model file's suffix, absolute, ./ or ../) rather
    than a name."""
    return given.exists() or given.suffix.lower() in FILE_SUFFIXES or given.is_absolute() or str(given).startswith(".")


def named(text: str, found: list[Found]) -> Found:
    """The model of that name (any case); without a tag, the one name:latest or the only name:<tag>; org/repo:X
    also takes a file of the repository whose name shows X (UD-Q4_K_XL), as `kinetic pull` takes it."""
    key = text.casefold()
    matches = [model for model in found if key in {name.casefold() for name in model.names}]
    if not matches and ":" not in text:
        tagged = [model for model in found if key in {name.casefold().rpartition(":")[0] for name in model.names}]
        matches = [model for model in tagged if f"{key}:latest" in {name.casefold() for name in model.names}] or tagged
    if not matches and ":" in text:
        repo, _, quant = key.rpartition(":")
        matches = [model for model in found if (model.repo or "").casefold() == repo and
                   shows_quant(model.path.name, quant)]
    if len({model.name for model in matches}) > 1:
        listed = ", ".join(model.name for model in matches)
        raise ModelNameError(f"{text} names {len(matches)} models: {listed}; give one of these names")
    if matches:
        return matches[0]
    raise ModelNameError(f"{text} is no file and no model's name{closest(text, found)} (`kinetic models` lists "
                         f"them)")


def closest(text: str, found: list[Found]) -> str:
    names = {name.casefold(): name for model in found for name in model.names}
    near = difflib.get_close_matches(text.casefold(), list(names), CLOSEST, 0.5)
    return f"; the closest: {', '.join(names[name] for name in near)}" if near else ""
