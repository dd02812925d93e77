"""A model found on disk, and the names of the models in a repository folder (LM Studio's layout
<org>/<repo>/<file>.gguf, Kinetic's own, and a Hugging Face snapshot), which are the names `kinetic pull`
prints: org/repo:QUANT, and org/repo where the folder holds one model."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from kinetic.hub.files import Model, RemoteFile, models, projector


@dataclass(frozen=True)
class Found:
    name: str  # as `kinetic models` shows it
    parts: tuple[Path, ...]  # the model's file, or a split model's parts in order
    source: str  # "folder", "ollama", "lmstudio", "huggingface", "llama.cpp"
    aliases: tuple[str, ...] = ()  # other names it answers to: org/repo:QUANT besides org/repo
    projector: Optional[Path] = None  # the vision projector stored with it
    repo: Optional[str] = None  # org/repo, for a model in a repository's folder

    @property
    def path(self) -> Path:
        return self.parts[0]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def size(self) -> int:
        return sum(part.stat().st_size for part in self.parts if part.is_file())  # a missing part: 0


def gguf_files(folder: Path) -> list[Path]:
    """The .gguf files under folder (any depth), those of broken links left out, sorted."""
    return sorted(path for path in folder.rglob("*") if path.name.lower().endswith(".gguf") and path.is_file())


def repository_models(repo: str, folder: Path, source: str) -> list[Found]:
    """The models in one repository's folder, named org/repo:QUANT (org/repo:<file stem> where the file name
    shows no quantization, or one another file shows too), and org/repo where the folder holds this model
    alone."""
    files = local_files(folder, gguf_files(folder))
    held = models(files)
    mmproj = projector(files)
    quants = Counter(model.quant for model in held)
    found = []
    for model in held:
        parts = local_parts(folder, model)
        tagged = f"{repo}:{model.quant if model.quant and quants[model.quant] == 1 else parts[0].stem}"
        name, aliases = (repo, (tagged,)) if len(held) == 1 else (tagged, ())
        found.append(Found(name, parts, source, aliases, folder / mmproj.name if mmproj else None, repo))
    return found


def organised_models(root: Path, source: str) -> list[Found]:
    """The models of a folder in LM Studio's layout, root/<org>/<repo>/..."""
    found = []
    for org in sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else ():
        for repo in sorted(path for path in org.iterdir() if path.is_dir()):
            found += repository_models(f"{org.name}/{repo.name}", repo, source)
    return found


def loose_models(root: Path, source: str) -> list[Found]:
    """The .gguf files directly in root, each named by its file name's stem (projectors and a split model's
    later parts left out)."""
    if not root.is_dir():
        return []
    files = local_files(root, (path for path in sorted(root.iterdir())
                               if path.name.lower().endswith(".gguf") and path.is_file()))
    return [Found(Path(model.parts[0].name).stem, local_parts(root, model), source) for model in models(files)]


def folder_models(root: Path, source: str) -> list[Found]:
    """Every model under root in any layout, named by its path there without .gguf (projectors and a split
    model's later parts left out)."""
    return [Found(model.parts[0].name[: -len(".gguf")], local_parts(root, model), source)
            for model in models(local_files(root, gguf_files(root)))]


def local_files(root: Path, paths: Iterable[Path]) -> list[RemoteFile]:
    """Files under root as pull's file records (their path below root, their size), which hub.files groups into
    models and names by quantization as it does a repository's."""
    return [RemoteFile(path.relative_to(root).as_posix(), path.stat().st_size, None, None) for path in paths]


def local_parts(root: Path, model: Model) -> tuple[Path, ...]:
    return tuple(root / part.name for part in model.parts)
