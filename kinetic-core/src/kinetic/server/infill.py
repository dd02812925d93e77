"""Fill in the middle: the prompt of code between a prefix and a suffix, built as llama-server builds it.

llama-server's format_prompt_infill (tools/server/server-common.cpp) uses the repo-level FIM pattern
(arXiv 2409.12186), which the Infill route (llamacpp.py) and a /v1/completions request with a suffix
(jobs.completion_job) both follow, so the same request gives the same token ids:

    [FIM_REP]myproject\\n [FIM_SEP]filename0\\n extra 0 ... [FIM_SEP]filename\\n
    [FIM_PRE]prefix prompt [FIM_SUF]suffix [FIM_MID]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from kinetic.server.errors import ApiError, bad_request
from kinetic.server.fields import Fields
from kinetic.server.llama_prompt import mixed_tokens

# llama-server's defaults for what the layout is cut to: its batch (-b) and its server-wide -n
N_BATCH = 2048
SERVER_N_PREDICT = -1
REPO = "myproject\n"  # llama-server's fixed project name
FILE = "filename\n"  # and the current file's
SNIPPET = "\n\n--- snippet ---\n\n"  # what separates extra chunks where the vocabulary has no FIM_SEP


@dataclass(frozen=True)
class FimTokens:
    pre: int
    suf: int
    mid: int
    rep: Optional[int]
    sep: Optional[int]


def fim_tokens(tokenizer) -> FimTokens:
    """The vocabulary's FIM tokens; without prefix, suffix and middle ones, llama-server's 501."""
    special = tokenizer.special
    missing = "".join(f"{name} token is missing. " for name, token in (
        ("prefix", special.fim_pre_id), ("suffix", special.fim_suf_id), ("middle", special.fim_mid_id))
        if token is None)
    if missing:
        raise ApiError(501, f"Infill is not supported by this model: {missing}")
    return FimTokens(special.fim_pre_id, special.fim_suf_id, special.fim_mid_id, special.fim_rep_id,
                     special.fim_sep_id)


def has_fim(tokenizer) -> bool:
    special = tokenizer.special
    return None not in (special.fim_pre_id, special.fim_suf_id, special.fim_mid_id)


@dataclass(frozen=True)
class Chunk:
    """One of input_extra's files: its text goes before the code, under its filename."""

    text: str
    filename: str = "tmp"


def extra_chunks(fields: Fields) -> list[Chunk]:
    """input_extra: a list of {"text": string, "filename": string (optional)}."""
    extra = fields.body.get("input_extra")
    if extra is None:
        return []
    if not isinstance(extra, list):
        raise bad_request('"input_extra" must be an array of {"filename": string, "text": string}', "input_extra")
    chunks = []
    for chunk in extra:
        if not isinstance(chunk, dict) or not isinstance(chunk.get("text"), str):
            raise bad_request('extra_context chunk must contain a "text" field with a string value', "input_extra")
        filename = chunk.get("filename", "tmp")
        if not isinstance(filename, str):
            raise bad_request('extra_context chunk\'s "filename" field must be a string', "input_extra")
        chunks.append(Chunk(chunk["text"], filename))
    return chunks


def _extra_tokens(tokenizer, fim: FimTokens, chunks: list[Chunk]) -> list[int]:
    """The repository context: the project, each extra file, then the current file's header."""
    def plain(text: str) -> list[int]:
        return tokenizer.encode(text, add_special=False, parse_special=False)

    tokens = [fim.rep, *plain(REPO)] if fim.rep is not None else []
    for chunk in chunks:
        tokens += [fim.sep, *plain(chunk.filename + "\n")] if fim.sep is not None else plain(SNIPPET)
        tokens += plain(chunk.text)
    if fim.sep is not None:
        tokens += [fim.sep, *plain(FILE)]
    return tokens


def infill_prompt(tokenizer, prefix: Any, suffix: Any, chunks: list[Chunk], prompt: list[int],
                  n_ctx: int) -> list[int]:
    """The whole prompt: prefix and suffix (strings or mixed lists, special tokens not parsed) cut to fit one
    batch (3:1, the prefix's end and the suffix's start kept), the extra files' end in what the context has left."""
    fim = fim_tokens(tokenizer)
    prefix_tokens = mixed_tokens(tokenizer, prefix, "input_prefix", add_special=False, parse_special=False)
    suffix_tokens = mixed_tokens(tokenizer, suffix, "input_suffix", add_special=False, parse_special=False)
    extra = _extra_tokens(tokenizer, fim, chunks)
    n_prefix = min(len(prefix_tokens), 3 * (N_BATCH // 4))
    n_suffix = min(len(suffix_tokens), max(0, N_BATCH // 4 - (2 + len(prompt))))
    n_extra = min(max(0, n_ctx - N_BATCH - 2 * SERVER_N_PREDICT), len(extra))
    head = [fim.pre, *prefix_tokens[len(prefix_tokens) - n_prefix:], *prompt]
    tail = [fim.suf, *suffix_tokens[:n_suffix]]
    bos = [tokenizer.bos_id] if tokenizer.add_bos and tokenizer.bos_id is not None else []
    return [*extra[len(extra) - n_extra:], *bos, *head, *tail, fim.mid]


def suffix_prompt(tokenizer, prompt: Any, suffix: str, n_ctx: int) -> list[int]:
    """/v1/completions with a suffix: the prompt is the prefix, and the answer fills the middle."""
    if not has_fim(tokenizer):
        raise bad_request("suffix needs a model whose vocabulary has fill-in-the-middle tokens, and this one has "
                          "none; send the prompt without suffix", "suffix")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    return infill_prompt(tokenizer, prompt, suffix, [], [], n_ctx)
