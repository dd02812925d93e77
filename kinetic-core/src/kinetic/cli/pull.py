"""`kinetic pull ORG/REPO[:QUANT]`: a GGUF model from Hugging Face into <dir>/<org>/<repo>/ (LM Studio's
layout), and the name to run it by. The only command that touches the network."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from kinetic import system
from kinetic.cli.doctor import row
from kinetic.cli.usage import UsageError
from kinetic.errors import HubError
from kinetic.hub.choice import choose
from kinetic.hub.files import Model, RemoteFile, is_later_part, is_projector, model_holding, models, projector
from kinetic.paths import models_dir
from kinetic.system import GIB

if TYPE_CHECKING:  # pull_command imports it once HF_HUB_DISABLE_TELEMETRY is set: it loads huggingface_hub
    from kinetic.hub.remote import Hub

KEEP_FREE = 2 * GIB  # disk left after the download
REPOSITORY = re.compile(r"(?P<repo>[\w.-]+/[\w.-]+)(?::(?P<quant>[\w.-]+))?")


def pull_command(spec: str, file: Optional[str], no_mmproj: bool, folder: Optional[Path]) -> None:
    # huggingface_hub reads this when imported; set, it sends no telemetry (the agent-harness lookup in its
    # user agent) besides the requests pull makes
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from kinetic.hub.remote import Hub

    repo, quant = parse(spec)
    if quant and file:
        raise UsageError("name the quantization (ORG/REPO:QUANT) or the --file, not both")
    hub = Hub.from_env()
    commit, files = hub.files(repo)
    model, why, wanted = selection(repo, files, quant, file, no_mmproj)
    target = (folder or models_dir()) / repo
    print(row("source", f"{hub.endpoint}/{repo} (commit {commit[:12]})"))
    if why:
        print(row("quant", why))
    print("\n".join(file_lines(wanted, target)), flush=True)
    download(hub, repo, commit, wanted, target)
    print(f"Run it with: kinetic run {run_name(repo, model, quant, target)}" if model
          else f"Saved as {target / file}")


def download(hub: Hub, repo: str, commit: str, wanted: list[RemoteFile], target: Path) -> None:
    """Each file into target, once the disk is found to hold them, with a line as each is checked."""
    from kinetic.hub.download import bytes_to_fetch, fetch, hash_name

    check_disk(target, sum(bytes_to_fetch(target, remote) for remote in wanted))
    try:
        for remote in wanted:
            fetched = fetch(hub, repo, commit, remote, target)
            print(row("", f"{remote.name}: {'downloaded' if fetched else 'already here'}, {hash_name(remote)} "
                          f"checked"), flush=True)
    except KeyboardInterrupt:
        print("kinetic: interrupted; repeat kinetic pull to resume the download", file=sys.stderr)
        raise


def parse(spec: str) -> tuple[str, Optional[str]]:
    match = REPOSITORY.fullmatch(spec)
    if not match:
        raise UsageError(f"{spec!r} is no Hugging Face repository: give ORG/REPO[:QUANT], e.g. "
                         f"unsloth/Qwen3-4B-GGUF:Q4_K_M")
    return match["repo"], match["quant"]


def selection(repo: str, files: list[RemoteFile], quant: Optional[str], file: Optional[str],
              no_mmproj: bool) -> tuple[Optional[Model], Optional[str], list[RemoteFile]]:
    """(the model to pull, the line saying why, the files to download: its parts and the projector);
    --file takes every part of the split model it belongs to, and gives (None, None, [it]) for a file that is
    no GGUF model's."""
    if file:
        named = named_file(repo, files, file)
        model, why = model_holding(files, file), None
        if model is None:
            return None, None, [named]
    else:
        choice = choose(models(files), quant, repo)
        model, why = choice.model, choice.why
    mmproj = None if no_mmproj else projector(files)
    return model, why, list(model.parts) + ([mmproj] if mmproj else [])


def named_file(repo: str, files: list[RemoteFile], name: str) -> RemoteFile:
    found = next((remote for remote in files if remote.name == name), None)
    if found is None:
        ggufs = ", ".join(remote.name for remote in files if remote.name.lower().endswith(".gguf")) or "none"
        raise HubError(f"{repo} has no file {name}; its GGUF files: {ggufs}")
    return found


def file_lines(wanted: list[RemoteFile], target: Path) -> list[str]:
    width = max(len(remote.name) for remote in wanted)
    lines = [row("files" if i == 0 else "", f"{remote.name:<{width}}  {size_text(remote.size):>10}")
             for i, remote in enumerate(wanted)]
    lines.append(row("", f"{size_text(sum(remote.size for remote in wanted))} in all, into {target}"))
    return lines


def size_text(n: int) -> str:
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n} bytes"


def check_disk(target: Path, needed: int) -> None:
    _, free = system.disk_free(target)
    if free - needed < KEEP_FREE:
        raise HubError(f"the download needs {size_text(needed)} and {target} has {size_text(free)} free, which "
                       f"would leave less than 2 GiB; free some space or pull into another --dir")


def run_name(repo: str, model: Model, quant: Optional[str], target: Path) -> str:
    """org/repo:QUANT (as named, else as the file name shows it); without one, org/repo where the folder holds
    this model alone, else the file's path."""
    if quant or model.quant:
        return f"{repo}:{(quant or model.quant).upper()}"
    held = [path for path in target.rglob("*.gguf") if not is_projector(path.name) and not is_later_part(path.name)]
    return repo if len(held) == 1 else str(target / model.parts[0].name)
