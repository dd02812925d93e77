"""llama-cpp-python's Llama class on Kinetic's server layer: a completion or chat is the request the server's
/v1/completions or /v1/chat/completions route answers (kinetic.server.openai.Completions.answer, without HTTP),
with llama-cpp-python's defaults and response shapes. What Kinetic cannot do is a NotImplementedError naming
the argument, never a silent no-op."""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence, Union

from kinetic.engine.embedding import EUCLIDEAN, Embedder
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.llama_cpp.grammar import LlamaGrammar
from kinetic.llama_cpp.shapes import embedding_list, llama_cpp_shaped
from kinetic.server.embeddings import NO_NORM
from kinetic.server.errors import ApiError
from kinetic.server.fields import Fields
from kinetic.server.openai import Completions
from kinetic.server.served import ServedModel
from kinetic.tokenizer import load_tokenizer

LLAMA_DEFAULT_SEED = 0xFFFFFFFF  # llama.cpp's: a fresh seed
# Llama() arguments for what Kinetic decides by itself (batch sizes, threads for batches, memory mapping, flash
# attention, ...): taken and left alone, as `kinetic serve` takes llama-server's flags for them
TUNING = {"n_batch", "n_ubatch", "n_threads_batch", "use_mmap", "use_mlock", "logits_all", "offload_kqv",
          "flash_attn", "op_offload", "swa_full", "no_perf", "last_n_tokens_size", "numa", "split_mode", "main_gpu",
          "tensor_split", "spm_infill", "rpc_servers"}
# Llama() arguments Kinetic has no counterpart for, and their defaults, which change nothing
UNSUPPORTED = {"lora_path": None, "lora_base": None, "lora_scale": 1.0, "chat_format": None, "chat_handler": None,
               "draft_model": None, "tokenizer": None, "kv_overrides": None, "rope_scaling_type": -1,
               "pooling_type": -1, "attention_type": -1, "rope_freq_base": 0.0, "rope_freq_scale": 0.0,
               "yarn_ext_factor": -1.0, "yarn_attn_factor": 1.0, "yarn_beta_fast": 32.0, "yarn_beta_slow": 1.0,
               "yarn_orig_ctx": 0, "type_k": None, "type_v": None, "clip_model_path": None}
WHY = {"chat_format": "Kinetic renders chats with the model's own template",
       "chat_handler": "Kinetic renders chats with the model's own template",
       "draft_model": "Kinetic drafts by itself (RAD-1)"}


class Llama:
    """A model, as llama-cpp-python's Llama loads it: n_ctx tokens (512 by default; 0 for the model's own),
    n_gpu_layers 0 for the CPU and any other value for the GPU when the model fits."""

    def __init__(self, model_path: str, *, n_gpu_layers: int = 0, seed: int = LLAMA_DEFAULT_SEED, n_ctx: int = 512,
                 n_threads: Optional[int] = None, embedding: bool = False, vocab_only: bool = False,
                 verbose: bool = True, **options: Any):
        _check_options(options)
        self.model_path = model_path
        self.verbose = verbose
        try:
            self._tokenizer = load_tokenizer(model_path)
            self._served = None if vocab_only else ServedModel(Session(Path(model_path), SessionOptions(
                device="cpu" if n_gpu_layers == 0 else "auto", threads=n_threads, ctx_size=n_ctx)), model_path)
        except KineticError as error:
            raise ValueError(f"Failed to load model from file: {model_path}: {error}") from None
        self._embedding = embedding
        self._embedder: Optional[Embedder] = None
        self._seeds = random.Random()
        self.set_seed(seed)
        self._streaming: Optional[int] = None  # the thread whose stream holds the model

    # -- generating

    def __call__(self, prompt: Union[str, list[int]], **arguments: Any):
        return self.create_completion(prompt, **arguments)

    def create_completion(self, prompt: Union[str, list[int]], suffix: Optional[str] = None,
                          max_tokens: Optional[int] = 16, temperature: float = 0.8, top_p: float = 0.95,
                          min_p: float = 0.05, typical_p: float = 1.0, logprobs: Optional[int] = None,
                          echo: bool = False, stop: Optional[Union[str, list[str]]] = (),
                          frequency_penalty: float = 0.0, presence_penalty: float = 0.0, repeat_penalty: float = 1.0,
                          top_k: int = 40, stream: bool = False, seed: Optional[int] = None, tfs_z: float = 1.0,
                          mirostat_mode: int = 0, mirostat_tau: float = 5.0, mirostat_eta: float = 0.1,
                          model: Optional[str] = None, stopping_criteria: Any = None, logits_processor: Any = None,
                          grammar: Optional[LlamaGrammar] = None, logit_bias: Optional[dict[int, float]] = None):
        """A completion of prompt (text or token ids), as /v1/completions gives it; echo puts the prompt's text
        before the answer's."""
        _refuse(stopping_criteria=stopping_criteria, logits_processor=logits_processor, tfs_z=tfs_z)
        if echo and logprobs is not None:
            raise NotImplementedError("echo with logprobs: Kinetic scores the answer's tokens, not the prompt's")
        body = {"prompt": prompt, "suffix": suffix, "logprobs": logprobs, "stop": _stops(stop),
                **self._sampling(max_tokens, temperature, top_p, top_k, min_p, typical_p, frequency_penalty,
                                 presence_penalty, repeat_penalty, seed, mirostat_mode, mirostat_tau, mirostat_eta,
                                 grammar, logit_bias, stream)}
        echoed = (prompt if isinstance(prompt, str) else self.detokenize(prompt).decode("utf-8", "replace")) \
            if echo else ""
        return self._answer(False, body, model, echoed)

    def create_chat_completion(self, messages: list[dict[str, Any]], functions: Any = None, function_call: Any = None,
                               tools: Optional[list[dict[str, Any]]] = None, tool_choice: Any = None,
                               temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40, min_p: float = 0.05,
                               typical_p: float = 1.0, stream: bool = False,
                               stop: Optional[Union[str, list[str]]] = (), seed: Optional[int] = None,
                               response_format: Optional[dict[str, Any]] = None, max_tokens: Optional[int] = None,
                               presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                               repeat_penalty: float = 1.0, tfs_z: float = 1.0, mirostat_mode: int = 0,
                               mirostat_tau: float = 5.0, mirostat_eta: float = 0.1, model: Optional[str] = None,
                               logits_processor: Any = None, grammar: Optional[LlamaGrammar] = None,
                               logit_bias: Optional[dict[int, float]] = None, logprobs: Optional[bool] = None,
                               top_logprobs: Optional[int] = None):
        """The chat's answer through the model's own template, as /v1/chat/completions gives it: tools,
        tool_choice and response_format as OpenAI's."""
        _refuse(functions=functions, function_call=function_call, logits_processor=logits_processor, tfs_z=tfs_z)
        body = {"messages": messages, "tools": tools, "tool_choice": tool_choice, "stop": _stops(stop),
                "response_format": response_format, "logprobs": logprobs, "top_logprobs": top_logprobs,
                **self._sampling(max_tokens, temperature, top_p, top_k, min_p, typical_p, frequency_penalty,
                                 presence_penalty, repeat_penalty, seed, mirostat_mode, mirostat_tau, mirostat_eta,
                                 grammar, logit_bias, stream)}
        return self._answer(True, body, model)

    def _sampling(self, max_tokens, temperature, top_p, top_k, min_p, typical_p, frequency_penalty, presence_penalty,
                  repeat_penalty, seed, mirostat_mode, mirostat_tau, mirostat_eta, grammar, logit_bias,
                  stream) -> dict[str, Any]:
        """The request fields every call sends; a call without a seed takes the next of the model's seeds."""
        return {"max_tokens": max_tokens if max_tokens is not None and max_tokens > 0 else None,
                "temperature": temperature, "top_p": top_p, "top_k": top_k, "min_p": min_p, "typical_p": typical_p,
                "frequency_penalty": frequency_penalty, "presence_penalty": presence_penalty,
                "repeat_penalty": repeat_penalty, "seed": self._seeds.getrandbits(32) if seed is None else seed,
                "mirostat": mirostat_mode, "mirostat_tau": mirostat_tau, "mirostat_eta": mirostat_eta,
                "logit_bias": {str(token): bias for token, bias in (logit_bias or {}).items()} or None,
                "stream": stream, **(grammar.fields() if grammar is not None else {})}

    def _answer(self, chat: bool, body: dict[str, Any], model: Optional[str], echoed: str = ""):
        served = self._text_model()
        if self._streaming == threading.get_ident():  # its slot would wait for this very thread
            raise RuntimeError("this thread's stream still holds the model: read it to the end or close it first")
        try:
            answer = Completions(served, chat).answer(Fields({k: v for k, v in body.items() if v is not None}))
        except (ApiError, KineticError) as error:
            raise ValueError(str(error)) from None
        shaped = llama_cpp_shaped(answer, model or self.model_path, echoed)
        return shaped if isinstance(shaped, dict) else self._holding(shaped)

    def _holding(self, chunks: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The stream's chunks, marking the thread reading them as the one that holds the model."""
        self._streaming = threading.get_ident()
        try:
            yield from chunks  # closing this closes them
        finally:
            self._streaming = None

    # -- embeddings

    def embed(self, input: Union[str, list[str]], normalize: bool = False, truncate: bool = True,
              return_count: bool = False):
        """Each text's vector (pooled as the file says; each token's for a model that pools none), not
        normalised unless normalize: a list of floats for a string, a list of them for a list."""
        if not self._embedding:
            raise ValueError("Llama model must be created with embedding=True to call this method")
        embedder = self._embedder or self._make_embedder()
        texts = [input] if isinstance(input, str) else list(input)
        tokens = [self._tokenizer.encode(text, add_special=True, parse_special=True) for text in texts]
        if truncate:
            tokens = [t[: self.n_ctx()] for t in tokens]
        try:
            vectors = [embedder.embed(t, EUCLIDEAN if normalize else NO_NORM).tolist() for t in tokens]
        except KineticError as error:
            raise ValueError(str(error)) from None
        out = vectors[0] if isinstance(input, str) else vectors
        return (out, sum(len(t) for t in tokens)) if return_count else out

    def create_embedding(self, input: Union[str, list[str]], model: Optional[str] = None) -> dict[str, Any]:
        vectors, count = self.embed(input, return_count=True)
        return embedding_list(vectors if not isinstance(input, str) else [vectors], model or self.model_path, count)

    def _make_embedder(self) -> Embedder:
        """The server's embedder where the file pools its embeddings, else one giving each token's vector."""
        served = self._loaded()
        self._embedder = served.embedder or Embedder(served.session, default_pooling="none")
        return self._embedder

    # -- the vocabulary and the context

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return self._tokenizer.encode(text.decode("utf-8", "ignore"), add_special=add_bos, parse_special=special)

    def detokenize(self, tokens: Sequence[int], prev_tokens: Optional[Sequence[int]] = None,
                   special: bool = False) -> bytes:
        """The tokens' bytes; after a leading BOS the space SentencePiece puts before the first word is dropped, as
        llama-cpp-python drops it."""
        text = b"".join(self._tokenizer.token_bytes(int(t), special) for t in tokens)
        bos = self._tokenizer.bos_id
        return text[1:] if tokens and bos is not None and tokens[0] == bos and text[:1] == b" " else text

    def n_ctx(self) -> int:
        return self._loaded().context_length

    def n_vocab(self) -> int:
        return self._tokenizer.n_vocab

    def n_embd(self) -> int:
        return int(self._loaded().session.model.arch_value("embedding_length"))

    def token_bos(self) -> int:
        return -1 if self._tokenizer.bos_id is None else self._tokenizer.bos_id

    def token_eos(self) -> int:
        return -1 if self._tokenizer.eos_id is None else self._tokenizer.eos_id

    def set_seed(self, seed: int) -> None:
        """The seed the next calls without a seed of their own take theirs from; LLAMA_DEFAULT_SEED (or -1, as
        llama.cpp reads it): a fresh one."""
        self._seeds.seed(None if seed & 0xFFFFFFFF == LLAMA_DEFAULT_SEED else seed)

    def close(self) -> None:
        """Release the model; later calls raise ValueError."""
        self._served = self._embedder = None

    def save_state(self) -> object:
        """Where the calls' seeds stand (the cache is the engine's, and any answer is the same with or without it)."""
        return self._seeds.getstate()

    def load_state(self, state: object) -> None:
        self._seeds.setstate(state)

    def _loaded(self) -> ServedModel:
        if self._served is None:
            raise ValueError(f"{self.model_path} is closed, or was loaded with vocab_only=True: no model is here")
        return self._served

    def _text_model(self) -> ServedModel:
        served = self._loaded()
        if served.embedder is not None or served.ranker is not None:
            raise ValueError(f"{self.model_path} is an embedding or reranking model, not a text model; use embed or "
                             "create_embedding")
        return served


def _check_options(options: dict[str, Any]) -> None:
    for name, value in options.items():
        if name in TUNING:
            continue
        if name not in UNSUPPORTED:
            raise TypeError(f"Llama() got an unexpected keyword argument {name!r}")
        if value != UNSUPPORTED[name]:
            raise NotImplementedError(f"Llama({name}=...): {WHY.get(name, 'Kinetic reads it from the model file')}")


def _refuse(**arguments: Any) -> None:
    """NotImplementedError for an argument given other than its default (None, or tfs_z 1: off)."""
    for name, value in arguments.items():
        if value is not None and not (name == "tfs_z" and value == 1.0):
            why = {"tfs_z": "llama.cpp removed tail-free sampling", "functions": "use tools",
                   "function_call": "use tool_choice"}.get(name, "Kinetic takes no Python callbacks in its loop")
            raise NotImplementedError(f"{name}: {why}")


def _stops(stop: Optional[Union[str, Sequence[str]]]) -> Optional[Union[str, list[str]]]:
    if stop is None or isinstance(stop, str):
        return stop or None
    return list(stop) or None
