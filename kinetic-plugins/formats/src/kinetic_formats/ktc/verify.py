"""Checking a .ktc file whole: its layout (reader.checked_layout), every section's BLAKE3 and the signature."""

from __future__ import annotations

from pathlib import Path

import blake3

from kinetic.contracts.model_file import Verification
from kinetic_formats.gguf.reader import map_file
from kinetic_formats.ktc.layout import SIGNATURE_SIZE
from kinetic_formats.ktc.reader import checked_layout


def verify_ktc(path: Path) -> Verification:
    """Every section's hash recomputed, and the signature checked; a ModelFileError for a damaged layout."""
    path = Path(path)
    data = map_file(path)
    layout = checked_layout(path, data)
    sections = []
    for section in layout.sections.values():
        digest = blake3.blake3(max_threads=blake3.blake3.AUTO)
        digest.update(memoryview(data)[section.offset : section.offset + section.length])
        sections.append((section.name, digest.hexdigest() == section.blake3))
    if layout.signature is None:
        return Verification(sections, signer=None, signature_holds=False)
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    public, signature = layout.signature[:32], layout.signature[32:SIGNATURE_SIZE]
    try:
        VerifyKey(public).verify(layout.manifest, signature)
        holds = True
    except BadSignatureError:
        holds = False
    return Verification(sections, signer=public.hex(), signature_holds=holds)
