"""Perplexity and KL divergence as llama.cpp's llama-perplexity computes them (tools/perplexity/perplexity.cpp):
the text's tokens cut into chunks of n_ctx, each chunk's first token replaced by BOS where the model adds one,
and each chunk's second half scored, every token from the logits of the one before it.

A KL-divergence base file is llama-perplexity's own: "_logits_", n_ctx, n_vocab and n_chunk (int32), the chunks'
tokens (int32), then for every scored token the log-probabilities of the whole vocabulary in nv = 2 * ceil(n_vocab
/ 2) + 4 uint16: a float32 scale and minimum, then each log-probability as minimum + scale * q, over the range
of 16 nats below the largest."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, Optional, Sequence

import numpy as np

from kinetic.contracts.device import Row
from kinetic.engine.generate import prompt_batches
from kinetic.engine.session import Session
from kinetic.errors import KineticError

MAGIC = b"_logits_"
SPAN = 16.0  # nats below the largest log-probability that a base file keeps


def chunks_of(tokens: Sequence[int], n_ctx: int, n_chunks: Optional[int] = None) -> list[list[int]]:
    """The text's whole chunks of n_ctx tokens, at most n_chunks of them; a text too short for two is refused,
    as llama-perplexity refuses it."""
    if n_chunks is not None and n_chunks == 0:
        raise KineticError("--chunks 0 scores nothing; give at least 1, or leave it out for the whole text")
    if len(tokens) < 2 * n_ctx:
        raise KineticError(f"the text is {len(tokens)} tokens; perplexity with -c {n_ctx} needs at least "
                           f"{2 * n_ctx}: give a longer text or a smaller -c")
    count = len(tokens) // n_ctx if n_chunks is None or n_chunks < 0 else min(n_chunks, len(tokens) // n_ctx)
    return [list(tokens[i * n_ctx : (i + 1) * n_ctx]) for i in range(count)]


def scored_logits(session: Session, chunk: list[int]) -> np.ndarray:
    """[n_ctx - n_ctx // 2, n_vocab] float32: the logits at positions n_ctx // 2 on, the chunk run from an empty
    sequence with its first token BOS where the model adds one."""
    tokens = list(chunk)
    if session.tokenizer.add_bos:
        tokens[0] = session.tokenizer.bos_id
    first, seq = len(tokens) // 2, session.new_sequence()
    out = []
    for start, stop in prompt_batches(0, len(tokens)):
        rows = [Row(seq, int(tokens[p]), p, parent=i - 1, logits=p >= first) for i, p in enumerate(range(start, stop))]
        logits = session.runner.forward(rows)
        if len(logits):
            out.append(logits)
    return np.concatenate(out)


def log_softmax_rows(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # logits: [n, n_vocab] float32
    """(each row's largest logit [n] float32, log of the sum of exp(logit - largest) [n] float64), as
    llama-perplexity sums them: expf in float32, the sum in double."""
    top = logits.max(axis=1)
    total = np.exp(logits - top[:, None]).sum(axis=1, dtype=np.float64)
    return top, np.log(total)


@dataclass
class Sums:
    """llama-perplexity's running sums over the scored tokens."""

    count: int = 0
    nll: float = 0.0
    nll2: float = 0.0

    def add(self, values: np.ndarray) -> None:
        self.count += len(values)
        self.nll += float(values.sum(dtype=np.float64))
        self.nll2 += float((values.astype(np.float64) ** 2).sum())

    def mean_and_uncertainty(self) -> tuple[float, float]:
        mean = self.nll / self.count
        spread = self.nll2 / self.count - mean * mean
        return mean, math.sqrt(spread / (self.count - 1)) if spread > 0 and self.count > 10 else 0.0


def token_nll(logits: np.ndarray, next_tokens: Sequence[int]) -> np.ndarray:
    """[n] float64: -log p(next token) of each row but the last (the last row has no next token scored)."""
    rows = logits[:-1]
    top, log_total = log_softmax_rows(rows)
    picked = rows[np.arange(len(rows)), next_tokens]
    return -((picked - top).astype(np.float64) - log_total)


def row_values(n_vocab: int) -> int:
    """uint16 values a base file keeps per scored token: the scale and minimum, then the vocabulary, even."""
    return 2 * ((n_vocab + 1) // 2) + 4


def quantized_log_probs(logits: np.ndarray, n_vocab: int) -> np.ndarray:  # logits: [n, n_vocab] float32
    """[n, nv] uint16 of a base file: each row's scale and minimum (two float32) then its log-probabilities,
    rounded to the nearest of 65536 steps from the minimum (llama-perplexity's nearest_int)."""
    top, log_total = log_softmax_rows(logits)
    log_total = log_total.astype(np.float32)
    low = np.maximum(logits.min(axis=1), top - np.float32(SPAN))
    scale = ((top - low) / np.float32(65535)).astype(np.float32)
    out = np.zeros((len(logits), row_values(n_vocab)), np.uint16)
    head = np.stack([scale, (low - top - log_total).astype(np.float32)], axis=1)
    out[:, :4] = head.view(np.uint16)
    inverse = np.where(scale > 0, np.float32(1) / np.where(scale > 0, scale, 1), 0).astype(np.float32)
    steps = np.rint(inverse[:, None] * (logits - low[:, None])).astype(np.int64)
    out[:, 4 : 4 + n_vocab] = np.where(logits > low[:, None], np.clip(steps, 0, 65535), 0)
    return out


def base_log_probs(rows: np.ndarray, n_vocab: int) -> np.ndarray:  # rows: [n, nv] uint16
    """[n, n_vocab] float32 log-probabilities of a base file's rows."""
    head = np.ascontiguousarray(rows[:, :4]).view(np.float32)  # [n, 2]: scale, minimum
    return (head[:, :1] * rows[:, 4 : 4 + n_vocab].astype(np.float32) + head[:, 1:2]).astype(np.float32)


@dataclass
class BaseFile:
    """A KL-divergence base file's header and its reader at the first chunk's log-probabilities."""

    n_ctx: int
    n_vocab: int
    tokens: list[list[int]]  # the chunks
    stream: BinaryIO = field(repr=False)

    def next_chunk(self) -> np.ndarray:
        """[n_ctx - 1 - n_ctx // 2, nv] uint16: the next chunk's rows."""
        n = self.n_ctx - 1 - self.n_ctx // 2
        size = row_values(self.n_vocab)
        data = self.stream.read(n * size * 2)
        if len(data) != n * size * 2:
            raise KineticError("the KL-divergence base file ends before its last chunk")
        return np.frombuffer(data, np.uint16).reshape(n, size)


def open_base(stream: BinaryIO) -> BaseFile:
    if stream.read(len(MAGIC)) != MAGIC:
        raise KineticError("not a KL-divergence base file: it does not start with _logits_ (write one with "
                           "--kl-divergence-base)")
    head = stream.read(12)
    if len(head) != 12:
        raise KineticError("the KL-divergence base file ends in its header")
    n_ctx, n_vocab, n_chunk = (int(v) for v in np.frombuffer(head, np.int32))
    if n_ctx < 16 or n_vocab < 1 or n_chunk < 1:
        raise KineticError(f"the KL-divergence base file's header is not a scoring's ({n_ctx} tokens a chunk, "
                           f"{n_vocab} in the vocabulary, {n_chunk} chunks)")
    flat = np.frombuffer(stream.read(4 * n_ctx * n_chunk), np.int32)
    if len(flat) != n_ctx * n_chunk:
        raise KineticError("the KL-divergence base file ends in its tokens")
    return BaseFile(n_ctx, n_vocab, [flat[i * n_ctx : (i + 1) * n_ctx].tolist() for i in range(n_chunk)], stream)


def write_base_header(stream: BinaryIO, n_ctx: int, n_vocab: int, chunks: list[list[int]]) -> None:
    stream.write(MAGIC + np.array([n_ctx, n_vocab, len(chunks)], np.int32).tobytes())
    stream.write(np.array(chunks, np.int32).tobytes())


@dataclass
class Divergence:
    """llama-perplexity's KL-divergence sums: both models' negative log-likelihoods, the KL divergence of the
    model from the base, the difference of the scored token's probability, and top-token agreement."""

    ours: Sums = field(default_factory=Sums)
    base: Sums = field(default_factory=Sums)
    kld: Sums = field(default_factory=Sums)
    p_diff2: Sums = field(default_factory=Sums)  # its nll is the sum of squares, its nll2 that of fourth powers
    same_top: int = 0
    kld_values: list = field(default_factory=list)

    def add(self, logits: np.ndarray, base_rows: np.ndarray, next_tokens: Sequence[int], n_vocab: int) -> None:
        rows = logits[:-1]
        top, log_total = log_softmax_rows(rows)
        ours_logp = (rows - top[:, None]).astype(np.float64) - log_total[:, None]  # [n, n_vocab]
        base_logp = base_log_probs(base_rows, n_vocab)
        index = np.arange(len(rows))
        nll = -ours_logp[index, next_tokens]
        nll_base = -base_logp[index, next_tokens].astype(np.float64)
        kept = base_logp > -SPAN
        kld = (np.where(kept, np.exp(base_logp.astype(np.float64)), 0.0) * (base_logp - ours_logp)).sum(axis=1)
        p_diff = np.exp(-nll) - np.exp(-nll_base)
        self.ours.add(nll)
        self.base.add(nll_base)
        self.kld.add(kld)
        self.p_diff2.count += len(p_diff)
        self.p_diff2.nll += float((p_diff ** 2).sum())
        self.p_diff2.nll2 += float((p_diff ** 4).sum())
        self.same_top += int((rows.argmax(axis=1) == base_logp.argmax(axis=1)).sum())
        self.kld_values += kld.tolist()

    def report(self) -> Iterator[str]:
        """The lines llama-perplexity ends with: both perplexities, the mean KL divergence, RMS Δp, same top."""
        ours, base = self.ours.mean_and_uncertainty(), self.base.mean_and_uncertainty()
        kld = self.kld.mean_and_uncertainty()
        rms = math.sqrt(self.p_diff2.nll / self.p_diff2.count)
        same = self.same_top / self.kld.count
        yield "====== Perplexity statistics ======"
        yield f"Mean PPL(Q)                   : {math.exp(ours[0]):10.6f} ± {math.exp(ours[0]) * ours[1]:10.6f}"
        yield f"Mean PPL(base)                : {math.exp(base[0]):10.6f} ± {math.exp(base[0]) * base[1]:10.6f}"
        yield f"Mean ln(PPL(Q)/PPL(base))     : {ours[0] - base[0]:10.6f}"
        yield ""
        yield "====== KL divergence statistics ======"
        yield f"Mean    KLD: {kld[0]:10.6f} ± {kld[1]:10.6f}"
        yield f"Maximum KLD: {max(self.kld_values):10.6f}"
        yield f"Median  KLD: {float(np.median(self.kld_values)):10.6f}"
        yield ""
        yield "====== Token probability statistics ======"
        yield f"RMS Δp    : {100 * rms:6.3f} %"
        yield f"Same top p: {100 * same:6.3f} ± {100 * math.sqrt(same * (1 - same) / (self.kld.count - 1)):6.3f} %"
