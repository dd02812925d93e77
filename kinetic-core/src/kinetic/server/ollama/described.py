"""The served model as Ollama describes a model: details, model_info (the GGUF metadata under its own key
names), capabilities, digest and times, from the file's header (Ollama's server/routes.go GetModelInfo,
fs/ggml, format.HumanNumber)."""

from __future__ import annotations

import datetime
import hashlib
import re
from typing import Any

import numpy as np

from kinetic.model.file_type import file_type
from kinetic.sampling.names import SETTINGS
from kinetic.server.llamacpp import chat_template_source
from kinetic.server.reasoning import thinks
from kinetic.server.served import ServedModel

SHOWN_ARRAY = 5  # longer arrays show as [] unless verbose, as Ollama shows them
HIDDEN_KEYS = ("general.name", "tokenizer.chat_template")  # Ollama leaves these out of model_info
OLLAMA_BLOB = re.compile(r"sha256-([0-9a-f]{64})")


def rfc3339(nanoseconds: int) -> str:
    """A UTC time (nanoseconds since 1970) as Go writes a time.Time in JSON: RFC 3339, its fraction without
    trailing zeros."""
    whole, fraction = divmod(nanoseconds, 1_000_000_000)
    nanos = f"{fraction:09d}".rstrip("0")
    stamp = datetime.datetime.fromtimestamp(whole, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return stamp + (f".{nanos}" if nanos else "") + "Z"


def human_number(n: int) -> str:
    """Ollama's parameter_size: 8B, 1.5B, 494.03M, 12K."""
    for scale, suffix, decimals in ((10**9, "B", 1), (10**6, "M", 2)):
        if n >= scale:
            return f"{n // scale}{suffix}" if n % scale == 0 else f"{n / scale:.{decimals}f}{suffix}"
    return f"{n / 1000:.0f}K" if n >= 1000 else str(n)


def parameter_count(served: ServedModel) -> int:
    return sum(tensor.n_elements for tensor in served.session.model.tensors.values())


def details(served: ServedModel) -> dict[str, Any]:
    model = served.session.model
    return {"parent_model": "", "format": model.format, "family": model.architecture,
            "families": [model.architecture], "parameter_size": human_number(parameter_count(served)),
            "quantization_level": file_type(model.metadata)}


def digest(served: ServedModel) -> str:
    """An Ollama blob's own digest (its file name); for another file, one of its path, size and time, since
    hashing gigabytes would hold up the listing."""
    path = served.session.path
    blob = OLLAMA_BLOB.fullmatch(path.name)
    if blob:
        return blob.group(1)
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()


def listed(served: ServedModel, name: str) -> dict[str, Any]:
    """The fields /api/tags and /api/ps share."""
    return {"name": name, "model": name, "size": served.session.path.stat().st_size, "digest": digest(served),
            "details": details(served)}


def modified_at(served: ServedModel) -> str:
    return rfc3339(served.session.path.stat().st_mtime_ns)


def capabilities(served: ServedModel) -> list[str]:
    """completion always; tools where the chat template renders them; thinking where the model thinks."""
    source = chat_template_source(served.session)
    if source is None:
        return ["completion"]
    tools = ["tools"] if served.session.template.capabilities.tools else []
    return ["completion", *tools, *(["thinking"] if thinks(source) else [])]


def model_info(served: ServedModel, verbose: bool) -> dict[str, Any]:
    """The GGUF metadata with general.parameter_count added, as Ollama's show reports it."""
    metadata = served.session.model.metadata
    info = {key: shown_value(value, verbose) for key, value in metadata.items() if key not in HIDDEN_KEYS}
    return {**info, "general.parameter_count": parameter_count(served)}


def shown_value(value: Any, verbose: bool) -> Any:
    """As JSON: arrays as lists (empty when long, unless verbose), a float32 value in its shortest form."""
    if isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        narrow = np.float32(value)
        return float(str(narrow)) if float(narrow) == value else value
    items = list(value)
    if len(items) > SHOWN_ARRAY and not verbose:
        return []
    return [shown_value(item.item() if isinstance(item, np.generic) else item, verbose) for item in items]


def parameters(served: ServedModel) -> str:
    """The sampler settings the file recommends (general.sampling.*), one per line, as Ollama's show lists a
    model's PARAMETER lines."""
    metadata = served.session.model.metadata
    found = [(setting.request[0], metadata[f"general.sampling.{setting.gguf}"]) for setting in SETTINGS
             if setting.gguf and f"general.sampling.{setting.gguf}" in metadata]
    return "\n".join(f"{name:<30} {shown_value(value, False)}" for name, value in found)


def shown(served: ServedModel, verbose: bool) -> dict[str, Any]:
    """POST /api/show's body."""
    session = served.session
    body: dict[str, Any] = {
        "modelfile": f"FROM {session.path}\n" + "".join(
            f"PARAMETER {line}\n" for line in parameters(served).splitlines()),
        "parameters": parameters(served), "template": chat_template_source(session) or "",
        "details": details(served), "model_info": model_info(served, verbose),
        "tensors": [{"name": t.name, "type": t.type.name, "shape": list(t.shape)}
                    for t in session.model.tensors.values()],
        "capabilities": capabilities(served), "modified_at": modified_at(served),
    }
    license_text = session.model.metadata.get("general.license")
    return {"license": license_text, **body} if isinstance(license_text, str) else body
