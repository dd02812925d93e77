"""Special token ids and end-of-generation tokens, settled the way llama.cpp settles them.

The file gives some ids; llama.cpp finds others by their text and adjusts a few token attributes
(a control-looking token becomes CONTROL, gpt-oss channel markers stay visible, ...). Generation
stops on the same tokens and tokenizing splits on the same ones only if these rules match.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from kinetic.tokenizer.vocab import TokenAttr, Vocab


@dataclass(frozen=True)
class SpecialTokens:
    """Ids of the special tokens, None where the vocabulary has none."""

    bos_id: int | None = None
    eos_id: int | None = None
    eot_id: int | None = None
    eom_id: int | None = None
    unk_id: int | None = None
    sep_id: int | None = None
    pad_id: int | None = None
    mask_id: int | None = None
    fim_pre_id: int | None = None
    fim_suf_id: int | None = None
    fim_mid_id: int | None = None
    fim_pad_id: int | None = None
    fim_rep_id: int | None = None
    fim_sep_id: int | None = None
    eog_ids: frozenset[int] = frozenset()  # tokens that end generation


# metadata keys, in llama.cpp's order: the deprecated prefix/suffix/middle keys win over fim_*
_KEYS = (
    ("bos_id", "bos_token_id"), ("eos_id", "eos_token_id"), ("eot_id", "eot_token_id"),
    ("eom_id", "eom_token_id"), ("unk_id", "unknown_token_id"), ("sep_id", "seperator_token_id"),
    ("pad_id", "padding_token_id"), ("mask_id", "mask_token_id"),
    ("fim_pre_id", "fim_pre_token_id"), ("fim_suf_id", "fim_suf_token_id"), ("fim_mid_id", "fim_mid_token_id"),
    ("fim_pad_id", "fim_pad_token_id"), ("fim_rep_id", "fim_rep_token_id"), ("fim_sep_id", "fim_sep_token_id"),
    ("fim_pre_id", "prefix_token_id"), ("fim_suf_id", "suffix_token_id"), ("fim_mid_id", "middle_token_id"),
)

# ids the file may leave out, found by text; the first text present wins
_BY_TEXT = {
    "eot_id": ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
               "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"),
    "eom_id": ("<|eom_id|>",),
    "fim_pre_id": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
                   "<|code_prefix|>", "<|prefix|>"),
    "fim_suf_id": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
                   "<|code_suffix|>", "<|suffix|>"),
    "fim_mid_id": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
                   "<|code_middle|>", "<|middle|>"),
    "fim_pad_id": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep_id": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep_id": ("<|file_sep|>",),
}

_EOG_TEXTS = (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
)

_ALWAYS_SHOWN = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")  # gpt-oss


def settle(vocab: Vocab, metadata: Mapping[str, Any], defaults: Mapping[str, int | None]) -> SpecialTokens:
    """The special ids of this vocabulary; adjusts vocab attributes as llama.cpp does."""
    ids = _ids_from_metadata(len(vocab), metadata, defaults)
    _find_by_text(vocab, ids)
    _mark_unused(vocab)
    eog = _end_of_generation(vocab, ids)
    _apply_name_rules(vocab, metadata)
    return SpecialTokens(**ids, eog_ids=frozenset(eog))


def _ids_from_metadata(
    n_vocab: int, metadata: Mapping[str, Any], defaults: Mapping[str, int | None]
) -> dict[str, int | None]:
    ids = {f.name: None for f in fields(SpecialTokens) if f.name != "eog_ids"}
    ids.update({name: (i if i is not None and i < n_vocab else None) for name, i in defaults.items()})
    for name, key in _KEYS:
        value = metadata.get(f"tokenizer.ggml.{key}")
        if value is not None and 0 <= int(value) < n_vocab:
            ids[name] = int(value)
    return ids


def _find_by_text(vocab: Vocab, ids: dict[str, int | None]) -> None:
    for name, texts in _BY_TEXT.items():
        if ids[name] is not None:
            continue
        found = _present(vocab, texts)
        if found:
            ids[name] = found[0]
            vocab.add_attr(found[0], TokenAttr.CONTROL)


def _mark_unused(vocab: Vocab) -> None:
    for token in [i for i, text in enumerate(vocab.texts) if "unused" in text]:
        if vocab.has(token, TokenAttr.CONTROL):
            vocab.add_attr(token, TokenAttr.UNUSED)


def _end_of_generation(vocab: Vocab, ids: dict[str, int | None]) -> set[int]:
    eog = {ids[name] for name in ("fim_pad_id", "fim_rep_id", "fim_sep_id") if ids[name] is not None}
    for token in _present(vocab, _EOG_TEXTS):
        eog.add(token)
        vocab.add_attr(token, TokenAttr.CONTROL)
    for token in _present(vocab, _ALWAYS_SHOWN):
        vocab.set_attr(token, TokenAttr.USER_DEFINED)
    eog.update(ids[name] for name in ("eos_id", "eot_id", "eom_id") if ids[name] is not None)
    texts = {vocab.texts[token]: token for token in eog}
    has_call = "<|call|>" in texts or "<|calls|>" in texts
    if "<|end|>" in texts and has_call and ("<|return|>" in texts or "<|flush|>" in texts):
        # o200k_harmony and solar-open: <|end|> closes a message, not the generation
        eog.discard(texts["<|end|>"])
        vocab.set_attr(texts["<|end|>"], TokenAttr.USER_DEFINED)
    if "</s>" in texts and ("<|tool_response>" in texts or "<|plamo:eos|>" in texts):
        eog.discard(texts["</s>"])
        vocab.set_attr(texts["</s>"], TokenAttr.NORMAL)
    return eog


def _apply_name_rules(vocab: Vocab, metadata: Mapping[str, Any]) -> None:
    """Phi-3 files: text after a special token loses its leading spaces."""
    name = str(metadata.get("general.name", "")).lower()
    if "phi-3" not in name and "phi3" not in name:
        return
    for token in vocab.special_tokens():
        vocab.add_attr(token, TokenAttr.RSTRIP)
    for text, rstrip in (("</s>", True), ("<unk>", False), ("<s>", False), ("<|endoftext|>", False)):
        token = vocab.get(text)
        if token is None:
            continue
        if rstrip:
            vocab.add_attr(token, TokenAttr.RSTRIP)
        else:
            vocab.clear_attr(token, TokenAttr.RSTRIP)


def _present(vocab: Vocab, texts: tuple[str, ...]) -> list[int]:
    """Ids of those texts that are tokens, in the order given."""
    return [token for token in map(vocab.get, texts) if token is not None]
