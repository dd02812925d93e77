"""kinetic verify and kinetic convert: a hashed model file (.ktc, docs/FORMAT.md) checked whole, or written from
another model file with the execution profile of the device it is converted on (kinetic.engine.profile)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from kinetic import __version__
from kinetic.contracts import ModelFormat
from kinetic.engine.options import SessionOptions
from kinetic.engine.profile import measured
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.model.load import open_model
from kinetic.plugins import plugins
from kinetic.receipt import build_id, file_blake3, read_key


def verify_command(path: Path) -> int:
    """Print each section's check and the signature's; 0 when everything holds, else 1."""
    model = open_model(path)
    checker = _format(model.format).verify
    if checker is None:
        raise KineticError(f"{path.name} is a {model.format.upper()} file, which holds no hashes to check; "
                           "kinetic verify checks .ktc files (kinetic convert writes them)")
    found = checker(path)
    width = max(len(name) for name, _ in found.sections)
    for name, ok in found.sections:
        print(f"  {name:{width}}  {'ok' if ok else 'DOES NOT MATCH its hash'}")
    if found.signer is None:
        print("not signed")
    else:
        print(f"signed with Ed25519 key {found.signer}: "
              + ("the signature holds" if found.signature_holds else "THE SIGNATURE DOES NOT HOLD"))
    print(f"{path.name}: " + ("intact" if found.intact else "damaged: it changed after it was written"))
    return 0 if found.intact else 1


def convert_command(source: Path, out: Path, sign_key: Optional[Path], device: str) -> None:
    writer = next((f for f in plugins().model_formats if out.suffix.lower() in f.suffixes and f.convert), None)
    if writer is None:
        raise KineticError(f"kinetic convert writes .ktc files; give the output a .ktc name, not {out.name}")
    if out.resolve() == Path(source).resolve():
        raise KineticError("give the output another name than the model file")
    secret = read_key(sign_key) if sign_key is not None else None
    session = Session(Path(source), SessionOptions(device=device, ctx_size=PROFILE_CONTEXT), announce=lambda line: None)
    profile = {"converted_from": {"file": Path(source).name, "blake3": file_blake3(Path(source))},
               "kinetic": {"version": __version__, "build": build_id()},
               **(measured(session) if session.stack.causal else {"device_class": session.runner.device_class})}
    writer.convert(Path(source), out, secret, profile)
    print(f"wrote {out}" + (" (signed)" if secret is not None else ""))


PROFILE_CONTEXT = 256  # tokens of the sequence the profile's passes run on


def _format(name: str) -> ModelFormat:
    return plugins().model_formats[name]
