"""`kinetic info`: what a model file holds, from its header alone."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from kinetic.contracts import ModelFile
from kinetic.model import open_model
from kinetic.tokenizer import SUPPORTED_PRE_TOKENIZERS
from kinetic.tokenizer.vocab import token_text

GIB, MIB = 1 << 30, 1 << 20
LABEL_WIDTH = 15


def info_lines(path: Path) -> list[str]:
    model = open_model(path)
    rows = [
        ("name", str(model.metadata.get("general.name", path.stem))),
        ("architecture", architecture_line(model)),
        ("size", size_line(model)),
        ("context", f"{model.arch_value('context_length', 'unknown')} tokens"),
        ("layers", f"{model.arch_value('block_count', 'unknown')}, width {model.arch_value('embedding_length', 'unknown')}"),
        ("prediction", "yes (drafts for speculative decoding)" if model.arch_value("nextn_predict_layers", 0) else "no"),
    ]
    lines = [path.name] + [f"  {label:<{LABEL_WIDTH}}{value}" for label, value in rows]
    lines += weights_lines(model)
    lines.append(f"  {'tokenizer':<{LABEL_WIDTH}}{tokenizer_line(model.metadata)}")
    template = model.metadata.get("tokenizer.chat_template")
    lines.append(f"  {'chat template':<{LABEL_WIDTH}}" + (f"{len(template.encode())} bytes" if template else "none"))
    return lines


def architecture_line(model: ModelFile) -> str:
    from kinetic.plugins import plugins

    arch = model.architecture or "(none given)"
    return f"{arch} (supported)" if arch in plugins().families else f"{arch} (not supported yet)"


def size_line(model: ModelFile) -> str:
    n_params = sum(t.n_elements for t in model.tensors.values())
    return f"{model.path.stat().st_size / GIB:.2f} GiB, {n_params / 1e9:.2f} B parameters"


def weights_lines(model: ModelFile) -> list[str]:
    """One line per weight type: tensor count and MiB, largest first."""
    counts: dict[str, int] = defaultdict(int)
    sizes: dict[str, int] = defaultdict(int)
    for tensor in model.tensors.values():
        counts[tensor.type.name] += 1
        sizes[tensor.type.name] += tensor.nbytes
    ordered = sorted(sizes, key=lambda name: -sizes[name])
    lines = [f"{name:<7} {counts[name]:>4} tensors {sizes[name] / MIB:>9.1f} MiB" for name in ordered]
    labels = ["weights"] + [""] * (len(lines) - 1)
    return [f"  {label:<{LABEL_WIDTH}}{line}" for label, line in zip(labels, lines)] or [f"  {'weights':<{LABEL_WIDTH}}none"]


def tokenizer_line(metadata) -> str:
    """e.g. 'gpt2 (qwen2), 151936 tokens, BOS none, EOS <|im_end|>'."""
    kind = metadata.get("tokenizer.ggml.model")
    if not kind:
        return "none"
    tokens = metadata.get("tokenizer.ggml.tokens") or []
    pre = metadata.get("tokenizer.ggml.pre")
    name = f"{kind} ({pre})" if kind == "gpt2" and pre else str(kind)
    if kind == "gpt2" and pre not in SUPPORTED_PRE_TOKENIZERS:
        name = f"{kind} ({pre or 'none'}: unsupported pre-tokenizer)"
    bos = token_text(metadata, "tokenizer.ggml.bos_token_id") if metadata.get("tokenizer.ggml.add_bos_token", True) else ""
    eos = token_text(metadata, "tokenizer.ggml.eos_token_id")
    return f"{name}, {len(tokens)} tokens, BOS {bos or 'none'}, EOS {eos or 'none'}"
