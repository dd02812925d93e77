"""The kinetic command under llama.cpp's names: a copy or link named llama-server runs as `kinetic serve`,
llama-cli as `kinetic chat` (`kinetic run` when given a prompt with -p) and llama-completion as `kinetic run`,
for apps that start those binaries by name (reference docs, "Switch from llama.cpp"). `kinetic link DIR`
makes the links.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Optional

from kinetic.errors import KineticError

NAMES = ("llama-server", "llama-cli", "llama-completion")
PROMPT_FLAGS = ("-p", "--prompt")


def as_kinetic(program: str, args: list[str]) -> list[str]:
    """args as kinetic's: the command a llama.cpp name stands for put first; kinetic's own args unchanged."""
    name = Path(program).name.lower().removesuffix(".exe")
    if name == "llama-server":
        return ["serve", *args]
    if name == "llama-completion":
        return ["run", *args]
    if name == "llama-cli":
        given_prompt = any(arg.partition("=")[0] in PROMPT_FLAGS for arg in args)
        return ["run" if given_prompt else "chat", *args]
    return args


def kinetic_executable() -> Path:
    """The kinetic command this process runs as, or the one installed beside this Python."""
    started = Path(sys.argv[0])
    if started.name.lower().removesuffix(".exe") in ("kinetic", *NAMES) and started.is_file():
        return started.resolve()
    found = shutil.which("kinetic", path=str(Path(sys.executable).parent)) or shutil.which("kinetic")
    if found is None:
        raise KineticError("the kinetic command is not installed; install Kinetic with pip, then run kinetic link")
    return Path(found).resolve()


def make_links(folder: Path, target: Optional[Path] = None) -> list[Path]:
    """llama-server, llama-cli and llama-completion in folder, each a link to the kinetic command (a copy where
    the file system has no links); a link to kinetic already there is kept, any other file is left and refused."""
    target = target or kinetic_executable()
    if not folder.is_dir():
        raise KineticError(f"{folder}: no such folder; create it first (mkdir -p {folder})")
    suffix = ".exe" if target.suffix.lower() == ".exe" else ""
    made = []
    for name in NAMES:
        link = folder / (name + suffix)
        if link.is_symlink() and link.resolve() == target:
            made.append(link)
            continue
        if link.exists() or link.is_symlink():
            raise KineticError(f"{link} already exists; remove it, or link into another folder")
        try:
            os.symlink(target, link)
        except OSError:  # Windows without the right to make links: a copy works the same
            shutil.copy2(target, link)
        made.append(link)
    return made
