"""Kinetic as a Python library (reference docs, Python): kinetic.Model, on the same Session the command line and
the server open a model with.

    model = kinetic.Model("model.gguf")                 # or a pulled model's name; options as SessionOptions
    model.chat([{"role": "user", "content": "Hi"}])     # the answer's text, through the chat template
    model.generate("The capital of France is", max_tokens=8, temperature=0)
    for piece in model.chat(messages, stream=True): ... # dropping the iterator stops the generation
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from kinetic.engine.embedding import Embedder, pooling_of
from kinetic.engine.options import SessionOptions
from kinetic.engine.ranking import Ranker, ranks
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.sampling.names import SETTINGS
from kinetic.stores import resolve_model

SAMPLING = {s.field for s in SETTINGS}  # keyword arguments a call takes as sampling settings
Answer = Union[str, Iterator[str]]


@contextlib.contextmanager
def failures_as_runtime_errors() -> Iterator[None]:
    """A failure the command line shows as one line (KineticError) raised as RuntimeError with that line."""
    try:
        yield
    except KineticError as error:
        raise RuntimeError(str(error)) from None


class Model:
    """A model file loaded once for many calls. Calls from several threads take turns; a stream holds the model
    until it ends or is dropped. Use it as a context manager, or close() it, to release the model at once."""

    def __init__(self, model: Union[str, Path], **options: Any):
        """model: a .gguf file or a pulled model's name; options: SessionOptions' fields (device, threads,
        ctx_size, ...). RuntimeError, with the command line's one line, when the model cannot be loaded."""
        try:
            settings = SessionOptions(**options)
        except TypeError as error:  # an option SessionOptions has no field for
            raise TypeError(f"kinetic.Model: {error}".replace("SessionOptions.__init__() ", "")) from None
        with failures_as_runtime_errors():
            self._session: Optional[Session] = Session(resolve_model(Path(model)), settings)
        self.name = self._session.name
        self._turn = threading.Lock()
        self._streaming: Optional[int] = None  # the thread whose stream holds the model
        self._seq = self._session.new_sequence()
        self._held: list[int] = []  # the tokens the sequence holds, which a next prompt may start with
        self._embeddings: Optional[Embedder] = None  # an embedding model's, made at its first embed()
        self._ranker: Optional[Ranker] = None  # a reranking model's, made at its first rerank()

    def chat(self, messages: Sequence[Mapping[str, Any]], max_tokens: Optional[int] = None,
             temperature: Optional[float] = None, seed: Optional[int] = None, stream: bool = False,
             **sampling: Any) -> Answer:
        """The answer to messages ([{"role": ..., "content": ...}]) through the model's chat template: its text,
        or with stream=True an iterator of its pieces. sampling: further settings by name (top_k, min_p, ...);
        the rest are the model file's recommended ones."""
        with failures_as_runtime_errors():
            prompt = self._generating().chat_prompt(list(messages))
        return self._answer(prompt, max_tokens, {"temp": temperature, "seed": seed, **sampling}, stream)

    def generate(self, prompt: str, max_tokens: Optional[int] = None, temperature: Optional[float] = None,
                 seed: Optional[int] = None, stream: bool = False, **sampling: Any) -> Answer:
        """The continuation of prompt exactly as written (special tokens such as <|im_start|> read as such),
        without the chat template; as chat() otherwise."""
        self._generating()
        tokens = self.tokenize(prompt)
        return self._answer(tokens, max_tokens, {"temp": temperature, "seed": seed, **sampling}, stream)

    def embed(self, texts: Union[str, Sequence[str]]) -> list[list[float]]:
        """One vector per text (a list of floats, normalised as llama-server's /v1/embeddings gives them), from
        an embedding model; a text alone gives a list holding its vector."""
        embedder = self._embedder()
        with failures_as_runtime_errors():
            return [embedder.embed(self.tokenize(text)).tolist() for text in ([texts] if isinstance(texts, str) else texts)]

    def rerank(self, query: str, documents: Sequence[str]) -> list[float]:
        """Each document's relevance to query (a probability for Qwen3-Reranker), in the documents' order, from a
        reranking model, as /v1/rerank scores them."""
        session = self._open()
        if not ranks(session):
            raise RuntimeError(f"{self.name} is not a reranking model; rerank needs one (a file whose pooling type "
                               "is rank)")
        self._check_not_streaming()
        with self._turn, failures_as_runtime_errors():
            self._ranker = self._ranker or Ranker(session)
            return [self._ranker.score(self._ranker.prompt(query, document)) for document in documents]

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True) -> list[int]:
        """text's token ids: the file's BOS first where it adds one, special tokens (<|im_start|>) read as such."""
        return self._open().tokenizer.encode(text, add_special=add_special, parse_special=parse_special)

    def detokenize(self, tokens: Sequence[int]) -> str:
        """The text of token ids, special tokens written out."""
        return self._open().tokenizer.decode(list(tokens))

    def close(self) -> None:
        """Release the model; a later call raises RuntimeError."""
        self._check_not_streaming()
        with self._turn:
            self._session = self._seq = self._embeddings = self._ranker = None
            self._held = []

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _check_not_streaming(self) -> None:
        """A call from the thread whose stream holds the model would wait for itself: refused instead."""
        if self._streaming == threading.get_ident():
            raise RuntimeError("this thread's stream still holds the model: read it to the end or close() it first")

    def _open(self) -> Session:
        if self._session is None:
            raise RuntimeError(f"the model {self.name} is closed")
        return self._session

    def _generating(self) -> Session:
        session = self._open()
        if pooling_of(session) is not None:
            raise RuntimeError(f"{self.name} is {'a reranking' if ranks(session) else 'an embedding'} model; use "
                               f"{'rerank' if ranks(session) else 'embed'}()")
        return session

    def _embedder(self) -> Embedder:
        session = self._open()
        if self._embeddings is None:
            if pooling_of(session) in (None, "rank"):
                raise RuntimeError(f"{self.name} is not an embedding model; embed needs one (a file that sets a "
                                   "pooling type other than rank)")
            self._embeddings = Embedder(session)
        return self._embeddings

    def _answer(self, prompt: list[int], max_tokens: Optional[int], sampling: dict[str, Any], stream: bool) -> Answer:
        unknown = sorted(set(sampling) - SAMPLING)
        if unknown:
            raise TypeError(f"unknown sampling setting {unknown[0]!r}; use one of {', '.join(sorted(SAMPLING))}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        pieces = self._pieces(prompt, -1 if max_tokens is None else max_tokens,
                              {name: value for name, value in sampling.items() if value is not None})
        return pieces if stream else "".join(pieces)

    def _pieces(self, prompt: list[int], max_tokens: int, overrides: dict[str, Any]) -> Iterator[str]:
        """The answer's text as it is written, holding the model meanwhile."""
        self._check_not_streaming()
        with self._turn:
            self._streaming = threading.get_ident()
            session = self._open()
            with failures_as_runtime_errors():
                generation = session.generate(self._seq, prompt, session.settings(overrides), max_tokens, self._held)
            detokenizer = session.tokenizer.detokenizer(special=False)
            answer: list[int] = []
            tokens = iter(generation)
            try:
                for token in tokens:
                    answer.append(token)
                    text = detokenizer.feed(token)
                    if text:
                        yield text
                rest = detokenizer.finish()
                if rest:
                    yield rest
            finally:
                tokens.close()  # a dropped stream: its generation stops here, and the sequence drops its guesses
                self._held = (prompt + answer)[: self._seq.n_tokens]
                self._streaming = None
