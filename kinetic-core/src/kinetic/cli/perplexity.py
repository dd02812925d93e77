"""`kinetic perplexity`: a text's perplexity as llama-perplexity scores it, optionally saving the log-probabilities
(--kl-divergence-base) or comparing with a saved file from either tool (--kl-divergence); on the CPU."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

from kinetic import progress
from kinetic.engine.options import SessionOptions
from kinetic.engine.perplexity import (Divergence, Sums, chunks_of, open_base, quantized_log_probs, scored_logits,
                                       token_nll, write_base_header)
from kinetic.engine.session import Session
from kinetic.errors import KineticError


def perplexity_command(model: Path, text: Optional[Path], n_ctx: int, n_chunks: Optional[int],
                       threads: Optional[int], base_out: Optional[Path], base_in: Optional[Path]) -> None:
    if base_in is not None:
        with open(_existing(base_in, "--kl-divergence"), "rb") as stream:
            base = open_base(stream)
            session = _session(model, base.n_ctx, threads)
            if base.n_vocab != session.tokenizer.n_vocab:
                raise KineticError(f"{base_in} holds log-probabilities over {base.n_vocab} tokens and the model has "
                                   f"{session.tokenizer.n_vocab}: compare models with the same vocabulary")
            _compare(session, base)
        return
    if text is None:
        raise KineticError("give the text to score (a file), or --kl-divergence FILE to compare with a base file")
    session = _session(model, n_ctx, threads)
    if session.tokenizer.add_eos:
        raise KineticError(f"{session.name} adds EOS after a text; llama-perplexity scores no such model either")
    tokens = session.tokenizer.encode(_existing(text, "the text").read_text(encoding="utf-8", errors="replace"),
                                      add_special=True, parse_special=False)
    chunks = chunks_of(tokens, n_ctx, n_chunks)
    print(f"perplexity: {len(tokens)} tokens, {len(chunks)} chunks of {n_ctx}, scoring the second half of each",
          flush=True)
    if base_out is None:
        _score(session, chunks, None)
        return
    with open(base_out, "wb") as stream:
        write_base_header(stream, n_ctx, session.tokenizer.n_vocab, chunks)
        _score(session, chunks, stream)


def _session(model: Path, n_ctx: int, threads: Optional[int]) -> Session:
    if n_ctx < 16:
        raise KineticError(f"-c {n_ctx} is too small to score; use -c 512, llama-perplexity's default")
    return Session(model, SessionOptions(device="cpu", threads=threads, ctx_size=n_ctx, off={"warm-start"}))


def _existing(path: Path, what: str) -> Path:
    if not path.is_file():
        raise KineticError(f"{what} {path} is not a file")
    return path


def _score(session: Session, chunks: list[list[int]], stream) -> None:
    """The running estimate after every chunk, then the final one with its uncertainty, as llama-perplexity
    prints them; each chunk's log-probabilities into stream, when given."""
    sums = Sums()
    for i, chunk in enumerate(progress.bar(chunks, unit="chunk")):
        logits = scored_logits(session, chunk)
        first = len(chunk) // 2
        sums.add(token_nll(logits, chunk[first + 1 :]))
        if stream is not None:
            stream.write(quantized_log_probs(logits[:-1], session.tokenizer.n_vocab).tobytes())
        print(f"[{i + 1}]{math.exp(sums.nll / sums.count):.4f},", end="", flush=True)
    print()
    mean, uncertainty = sums.mean_and_uncertainty()
    print(f"Final estimate: PPL = {math.exp(mean):.4f} +/- {math.exp(mean) * uncertainty:.5f}")


def _compare(session: Session, base) -> None:
    divergence = Divergence()
    print("chunk             PPL      ln(PPL(Q)/PPL(base))   KL Divergence   Same top p")
    for i, chunk in enumerate(progress.bar(base.tokens, unit="chunk")):
        logits = scored_logits(session, chunk)
        first = len(chunk) // 2
        divergence.add(logits, base.next_chunk(), chunk[first + 1 :], base.n_vocab)
        ours, theirs = divergence.ours.mean_and_uncertainty(), divergence.base.mean_and_uncertainty()
        print(f"{i + 1:4d}    {math.exp(ours[0]):9.4f}    {ours[0] - theirs[0]:10.5f}    "
              f"{divergence.kld.nll / divergence.kld.count:10.5f}    "
              f"{100 * divergence.same_top / divergence.kld.count:6.3f} %", flush=True)
    print()
    print("\n".join(divergence.report()))
