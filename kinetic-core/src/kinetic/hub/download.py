"""Downloading one file of a repository into place: into `<name>.part` beside its final path, resumed from
what an interrupted run left there (an HTTP Range request, through huggingface_hub's http_get), then checked
against the hash the hub publishes and renamed into place only when it matches.

Not hf_hub_download: in huggingface_hub 2.4 it writes each download to a file named for that process and
deletes it when the download fails, so a second run starts again from the first byte; and it checks only the
size. http_get is the transfer under it (retries, redirects, the progress bar on a terminal), given the
bytes already here."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from huggingface_hub.file_download import http_get

from kinetic.errors import HubError
from kinetic.hub.files import RemoteFile
from kinetic.hub.remote import Hub

CHUNK = 1 << 20


def final_path(folder: Path, file: RemoteFile) -> Path:
    return folder / file.name


def partial_path(folder: Path, file: RemoteFile) -> Path:
    return folder / (file.name + ".part")


def bytes_to_fetch(folder: Path, file: RemoteFile) -> int:
    """What downloading file into folder still takes: nothing for a file in place at its size, else what
    its .part lacks."""
    final, partial = final_path(folder, file), partial_path(folder, file)
    if final.is_file() and final.stat().st_size == file.size:
        return 0
    return file.size - (partial.stat().st_size if partial.is_file() else 0)


def hash_name(file: RemoteFile) -> str:
    """The hash file is checked against: the SHA256 the hub publishes for an LFS file, else its git blob hash."""
    return "SHA256" if file.sha256 else "git hash"


def matches(path: Path, file: RemoteFile) -> bool:
    """Whether path holds file's bytes, by hash_name(file)."""
    if file.sha256:
        digest = hashlib.sha256()
    else:
        digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size, usedforsecurity=False)
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest() == (file.sha256 or file.blob_id)


def fetch(hub: Hub, repo: str, commit: str, file: RemoteFile, folder: Path) -> bool:
    """Puts file at folder/file.name; False where it was there already with the right hash."""
    final, partial = final_path(folder, file), partial_path(folder, file)
    with hub.failures(repo):
        if final.is_file() and final.stat().st_size == file.size and matches(final, file):
            return False
        partial.parent.mkdir(parents=True, exist_ok=True)
        if partial.is_file() and partial.stat().st_size > file.size:
            partial.unlink()
        with partial.open("ab") as stream:
            http_get(hub.url(repo, commit, file.name), stream, resume_size=stream.tell(), headers=hub.headers(),
                     expected_size=file.size, displayed_filename=file.name)
        if not matches(partial, file):
            partial.unlink()
            raise HubError(f"{file.name}: the download does not match the {hash_name(file)} the hub publishes and "
                           f"was deleted; repeat kinetic pull")
        os.replace(partial, final)
    return True
