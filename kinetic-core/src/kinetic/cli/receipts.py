"""`kinetic run --receipt FILE [--sign-key KEY]` and `kinetic verify-receipt FILE`: a receipt of the answer
(kinetic.receipt), and its rerun alone with every speed technology off, the plainest way Kinetic decodes."""

from __future__ import annotations

import functools
import json
import operator
from pathlib import Path
from typing import Any, Mapping, Optional

from kinetic.cli.constraints import answer_grammar
from kinetic.cli.generating import Answered
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.receipt import (build_id, checked_signature, device_record, file_blake3, grammar_from, grammar_record,
                             make_receipt, read_key, settings_from, sign, tokens_blake3)

REQUIRED = (("receipt",), ("kinetic", "version"), ("kinetic", "build"), ("model", "file"), ("model", "path"),
            ("model", "blake3"), ("device", "class"), ("device", "settings", "ctx-size"),
            ("device", "settings", "cache-types"), ("prompt", "count"), ("prompt", "blake3"), ("prompt", "ids"),
            ("sampling", "max_tokens"), ("output", "finish"), ("output", "tokens", "count"),
            ("output", "tokens", "blake3"), ("output", "tokens", "ids"))  # what verify-receipt reads


def write_receipt(session: Session, given: Any, prompt: list[int], answered: Answered,
                  options: Mapping[str, Any]) -> None:
    limit = options["n_predict"]
    limits = {"max_tokens": limit if limit > 0 else None, "stop": [], **grammar_record(answer_grammar(options))}
    receipt = make_receipt(session.path, device_record(session), given, prompt, answered.settings, limits,
                           answered.finish, answered.text, answered.tokens)
    if options.get("sign_key") is not None:
        receipt = sign(receipt, read_key(Path(options["sign_key"])))
    try:
        Path(options["receipt"]).write_text(json.dumps(receipt, indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        raise KineticError(f"cannot write the receipt {options['receipt']}: {error.strerror}") from None


def verify_command(path: Path, model: Optional[Path], device: Optional[str]) -> int:
    """Check the receipt's hashes and signature and its model file, rerun it; the exit status (1 on any mismatch)."""
    receipt = _read(path)
    prompt, output = receipt["prompt"], receipt["output"]["tokens"]
    for name, part in (("prompt", prompt), ("output", output)):
        if tokens_blake3(part["ids"]) != part["blake3"] or len(part["ids"]) != part["count"]:
            raise KineticError(f"the receipt's {name} tokens do not match their BLAKE3: it was changed")
    settings = settings_from(receipt["sampling"])
    made = receipt["device"]["class"]
    print(f"receipt:   {receipt['model']['file']}, {prompt['count']} prompt and {output['count']} output tokens, "
          f"seed {settings.seed}, made on {made} by Kinetic {receipt['kinetic']['version']} "
          f"(build {receipt['kinetic']['build']})")
    public = checked_signature(receipt)
    print(f"signature: {'valid, public key ' + public if public else 'none'}")
    model = model or Path(receipt["model"]["path"])
    if not model.is_file():
        raise KineticError(f"the receipt's model {model} is not here; give its path with --model")
    if file_blake3(model) != receipt["model"]["blake3"]:
        raise KineticError(f"{model} is not the receipt's model {receipt['model']['file']} (its BLAKE3 differs)")
    print(f"model:     {model.name} matches (BLAKE3 {receipt['model']['blake3'][:16]})")
    return _rerun(receipt, model, device or made.split("-")[0], settings)


def _read(path: Path) -> dict[str, Any]:
    try:
        receipt = json.loads(path.read_text())
        for keys in REQUIRED:
            functools.reduce(operator.getitem, keys, receipt)
        ids = receipt["prompt"]["ids"] + receipt["output"]["tokens"]["ids"]
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ValueError("token ids must be integers")
    except OSError as error:
        raise KineticError(f"cannot read the receipt {path}: {error.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise KineticError(f"{path} is not a Kinetic receipt (write one with kinetic run --receipt)") from None
    return receipt


def _rerun(receipt: dict[str, Any], model: Path, device: str, settings) -> int:
    recorded = receipt["device"]["settings"]
    from kinetic.plugins import plugins

    off = frozenset(t.name for t in plugins().speed_technologies)
    session = Session(model, SessionOptions(device=device, ctx_size=recorded["ctx-size"], off=off,
                                            cache_types=tuple(recorded["cache-types"])))
    theirs = receipt["output"]["tokens"]["ids"]
    ours = list(session.generate(session.new_sequence(), receipt["prompt"]["ids"], settings, _limit(receipt),
                                 grammar=grammar_from(receipt["sampling"])))
    here = session.runner.device_class
    if ours == theirs:
        print(f"rerun:     identical, {len(ours)} of {len(theirs)} output tokens on {here} "
              f"(BLAKE3 {tokens_blake3(ours)[:16]})")
        return 0
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    print(f"rerun:     differs at output token {at}: {_token(ours, at)} here, {_token(theirs, at)} in the receipt")
    made = (receipt["kinetic"]["build"], receipt["device"]["class"])
    changes = [f"build {made[0]} -> {build_id()}"] if made[0] != build_id() else []
    changes += [f"device class {made[1]} -> {here}"] if made[1] != here else []
    print("           " + (f"the runs differ in: {', '.join(changes)} (a difference is then expected)" if changes
                           else "same build, device class and settings: this is a bug; please report it"))
    return 1


def _limit(receipt: dict[str, Any]) -> int:
    """The rerun's token limit: the recorded one for an answer cut there; one past the answer for one that ended
    by itself (the rerun must end there too); the answer's length where a stop string may have ended it."""
    count, sampling = receipt["output"]["tokens"]["count"], receipt["sampling"]
    if receipt["output"]["finish"] == "length":
        return sampling["max_tokens"] or count
    return count if sampling.get("stop") else count + 1


def _token(ids: list[int], at: int) -> str:
    return str(ids[at]) if at < len(ids) else "the end"
