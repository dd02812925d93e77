"""Receipts (reference docs, Receipts): what pins an answer's bits, kept so that `kinetic verify-receipt` can
rerun it. The model file's BLAKE3 (cached by path, size and modification time), the build (the BLAKE3 of Kinetic's
own source files, kernels included), the device class and the load settings that change the bits, the prompt's
tokens, every sampling setting with the seed, and the output tokens; optionally signed with Ed25519 over the
rest as compact JSON. Token hashes are BLAKE3 over the ids as little-endian 32-bit integers."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import math
import os
from pathlib import Path
from typing import Any, Optional, Sequence

import blake3
import numpy as np

from kinetic import __version__
from kinetic.constraints.grammar import Grammar
from kinetic.errors import KineticError
from kinetic.paths import cache_dir
from kinetic.sampling.settings import SamplingSettings

VERSION = 1
# what a receipt's sampling record holds beside the SamplingSettings
LIMITS = ("max_tokens", "stop", "grammar")
PACKAGES = ("kinetic", "kinetic_cpu", "kinetic_cuda", "kinetic_vulkan", "kinetic_families", "kinetic_formats",
            "kinetic_speed")
SOURCES = ("*.py", "*.cu", "*.cuh", "*.wgsl")


def tokens_blake3(ids: Sequence[int]) -> str:
    return blake3.blake3(np.asarray(ids, "<i4").tobytes()).hexdigest()


def file_blake3(path: Path) -> str:
    """The file's BLAKE3, from the cache (kinetic/hashes.json in the user cache) while its size and modification
    time are unchanged."""
    stat, cache = path.stat(), cache_dir("hashes.json")
    key = str(path.resolve())
    try:
        known = json.loads(cache.read_text())
    except (OSError, ValueError):
        known = {}
    entry = known.get(key)
    if entry and entry["size"] == stat.st_size and entry["mtime_ns"] == stat.st_mtime_ns:
        return entry["blake3"]
    digest = blake3.blake3(max_threads=blake3.blake3.AUTO).update_mmap(path).hexdigest()
    known[key] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "blake3": digest}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        written = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")  # whole or not at all, beside other writers
        written.write_text(json.dumps(known, indent=1))
        os.replace(written, cache)
    except OSError:
        pass  # the hash is right either way; it is computed again next time
    return digest


@functools.lru_cache(maxsize=None)
def build_id() -> str:
    """The first 16 hex digits of the BLAKE3 over Kinetic's installed source files (each path, then its bytes),
    kernels included: what decides the bits besides the model, the device and the settings."""
    digest = blake3.blake3()
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for source in sorted(p for pattern in SOURCES for p in root.rglob(pattern)):
            digest.update(f"{package}/{source.relative_to(root).as_posix()}\0".encode())
            digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def settings_record(settings: SamplingSettings) -> dict[str, Any]:
    """The settings as JSON: a banned token's bias (-inf) as false, as llama-server's logit_bias takes it."""
    record = dataclasses.asdict(settings)
    record["dry_sequence_breakers"] = list(settings.dry_sequence_breakers)
    record["logit_bias"] = {str(token): False if math.isinf(bias) else bias
                            for token, bias in settings.logit_bias.items()}
    return record


def settings_from(record: dict[str, Any]) -> SamplingSettings:
    """The SamplingSettings of a receipt's sampling record, its limits (LIMITS) left out."""
    try:
        bias = {int(t): -math.inf if b is False else float(b) for t, b in record["logit_bias"].items()}
        kept = {name: value for name, value in record.items() if name not in LIMITS}
        return SamplingSettings(**{**kept, "logit_bias": bias})
    except (TypeError, ValueError, KeyError) as error:
        raise KineticError(f"the receipt's sampling settings cannot be read ({error})") from None


def grammar_record(grammar: Optional[Grammar]) -> dict[str, Any]:
    """What a receipt's sampling record holds of an answer's grammar (a JSON schema's or tools' too, as llguidance
    grammar text): nothing without one."""
    return {} if grammar is None else {"grammar": {"kind": grammar.kind, "definition": grammar.definition}}


def grammar_from(record: dict[str, Any]) -> Optional[Grammar]:
    """The grammar a receipt's sampling record holds, or None."""
    given = record.get("grammar")
    try:
        return None if given is None else Grammar(definition=str(given["definition"]), kind=str(given["kind"]))
    except (TypeError, KeyError):
        raise KineticError("the receipt's grammar cannot be read") from None


def device_record(session) -> dict[str, Any]:
    """The session's device class and the load settings that change the bits."""
    runner = session.runner
    return {"class": runner.device_class, "name": runner.device_name,
            "settings": {"ctx-size": session.context_length, "cache-types": list(runner.cache_types)}}


def make_receipt(model: Path, device: dict[str, Any], given: Any, prompt: Sequence[int], settings: SamplingSettings,
                 limits: dict[str, Any], finish: str, text: str, output: Sequence[int]) -> dict[str, Any]:
    """The receipt of one answer. device: its class, name and the load settings that change the bits; given: the
    messages or prompt text as sent; limits: max_tokens and stop."""
    return {"receipt": VERSION, "kinetic": {"version": __version__, "build": build_id()},
            "model": {"file": model.name, "path": str(model), "size": model.stat().st_size,
                      "blake3": file_blake3(model)},
            "device": device, "input": given,
            "prompt": {"count": len(prompt), "blake3": tokens_blake3(prompt), "ids": list(prompt)},
            "sampling": {**settings_record(settings), **limits},
            "output": {"finish": finish, "text": text,
                       "tokens": {"count": len(output), "blake3": tokens_blake3(output), "ids": list(output)}}}


def signed_part(receipt: dict[str, Any]) -> bytes:
    """What a signature covers: every field but the signature, as compact JSON with sorted keys."""
    rest = {key: value for key, value in receipt.items() if key != "signature"}
    return json.dumps(rest, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(receipt: dict[str, Any], secret: bytes) -> dict[str, Any]:
    """receipt signed with the Ed25519 secret key (read_key's 32 bytes)."""
    from nacl.signing import SigningKey

    key = SigningKey(secret)
    signature = key.sign(signed_part(receipt)).signature
    return {**receipt, "signature": {"public_key": key.verify_key.encode().hex(), "ed25519": signature.hex()}}


def read_key(key_file: Path) -> bytes:
    """An Ed25519 secret key file: 32 bytes, or 64 hex digits (openssl rand -hex 32)."""
    try:
        data = key_file.read_bytes()
    except OSError as error:
        raise KineticError(f"cannot read the key {key_file}: {error.strerror}") from None
    text = data.strip()
    if len(text) == 64:
        try:
            return bytes.fromhex(text.decode())
        except ValueError:
            pass
    if len(data) == 32:
        return data
    raise KineticError(f"{key_file} is no Ed25519 secret key: it must hold 32 bytes or 64 hex digits "
                       "(make one with: openssl rand -hex 32 > receipt.key)")


def checked_signature(receipt: dict[str, Any]) -> Optional[str]:
    """The public key a valid signature was made with; None for an unsigned receipt; a KineticError for a
    signature that does not hold."""
    from nacl.exceptions import BadSignatureError
    from nacl.signing import VerifyKey

    signature = receipt.get("signature")
    if signature is None:
        return None
    try:
        VerifyKey(bytes.fromhex(signature["public_key"])).verify(signed_part(receipt),
                                                                 bytes.fromhex(signature["ed25519"]))
    except (BadSignatureError, ValueError, KeyError, TypeError):
        raise KineticError("the signature does not match the receipt: it was changed after it was signed") from None
    return signature["public_key"]
