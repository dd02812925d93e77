"""A model loaded and ready to answer: its stack on a device, its tokenizer and chat template."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Optional, Sequence

import numpy as np

from kinetic.chat.prompt import chat_prompt_tokens
from kinetic.chat.template import ChatTemplate, load_chat_template
from kinetic.engine.devices import choose_device
from kinetic.contracts.drafting import Drafter
from kinetic.sampling.dry import NO_BREAKERS, DryBreakers, resolve_breakers
from kinetic.engine.generate import Generation
from kinetic.contracts.prompt_states import PromptStates, common_prefix
from kinetic.sampling.chain import SamplerState, sample
from kinetic.sampling.settings import SamplingSettings, resolve_settings, with_fresh_seed
from kinetic.errors import KineticError
from kinetic.model import open_model
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.contracts.device import DeviceSequence, Row, UploadOptions
from kinetic.tokenizer import Tokenizer

DEFAULT_CONTEXT = 32768
WARM_UP_ROWS = (1, 16)  # a decoding step, then a batch as large as an AMX tile: every kind of kernel a request uses


def context_for(requested: Optional[int], trained: int) -> int:
    """-c: None for 32768 or less if the model was trained on less, 0 for all it supports; explicit wins."""
    if requested is None:
        return min(DEFAULT_CONTEXT, trained)
    return trained if requested <= 0 else requested


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class Session:
    """Everything one loaded model needs to answer prompts."""

    def __init__(self, path: Path, device: str = "auto", threads: Optional[int] = None,
                 ctx_size: Optional[int] = None, chat_template_file: Optional[Path] = None,
                 announce: Callable[[str], None] = _stderr, off: Collection[str] = (),
                 state_dir: Optional[Path] = None):
        self.path = Path(path)
        self.model = open_model(self.path)
        self.name = self.path.stem
        self.tokenizer = Tokenizer.from_metadata(self.model.metadata)
        self._template_file = chat_template_file
        self._template: Optional[ChatTemplate] = None
        self._breakers: dict[tuple[str, ...], DryBreakers] = {}
        stack = load_stack(self.model)
        self.context_length = context_for(ctx_size, int(self.model.arch_value("context_length", DEFAULT_CONTEXT)))
        self.device = choose_device(device, announce)
        options = UploadOptions(threads=threads, context_length=self.context_length, context_given=ctx_size is not None)
        self.runner = self.device.upload(stack, options)
        if self.runner.context_length < self.context_length:  # shrunk to fit the device (reference docs, -c)
            self.context_length = self.runner.context_length
            announce(f"context {self.context_length // 1024}k to fit the GPU; -c to change")
        self.drafter: Optional[Drafter] = None  # set by RAD-1 when it attaches
        self.prompt_states: Optional[PromptStates] = None  # set by Warm Start when it attaches
        self.state_dir = state_dir  # where Warm Start keeps states on disk; None: its default
        wanted = [t for t in plugins().speed_technologies if t.name not in off]
        self.speed_on = [t for t in wanted if t.attach(self)]
        self.speed_off = [t for t in plugins().speed_technologies if t not in self.speed_on]

    @property
    def template(self) -> ChatTemplate:
        """The chat template, read when first needed (a base model may have none)."""
        if self._template is None:
            self._template = load_chat_template(self.model.metadata, self._template_file)
        return self._template

    def chat_prompt(self, messages: Sequence[Mapping[str, Any]], **template_kwargs: Any) -> list[int]:
        return chat_prompt_tokens(self.template, self.tokenizer, messages, **template_kwargs)

    def settings(self, overrides: Mapping[str, Any]) -> SamplingSettings:
        """The model's recommended sampling, with the user's overrides and a concrete seed."""
        return with_fresh_seed(resolve_settings(self.model.metadata, overrides))

    def _dry_breakers(self, settings: SamplingSettings) -> DryBreakers:
        """DRY's sequence breakers as tokens, found once per list (it reads the whole vocabulary)."""
        if settings.dry_multiplier <= 0:
            return NO_BREAKERS
        key = settings.dry_sequence_breakers
        if key not in self._breakers:
            self._breakers[key] = resolve_breakers(key, self.tokenizer)
        return self._breakers[key]

    def new_sequence(self) -> DeviceSequence:
        return self.runner.new_sequence()

    def warm_up(self, seq: DeviceSequence) -> None:
        """Run a token and a batch through seq and forget them, so that the kernels load (and compile, the
        first time) now instead of in the first request, as llama.cpp's warm-up run does."""
        position = 0
        for n in WARM_UP_ROWS:
            n = min(n, self.context_length - 1 - position)
            if n <= 0:
                break
            self.runner.forward([Row(seq, 0, position + i, parent=i - 1, logits=i == n - 1) for i in range(n)])
            position += n
        seq.truncate(0)

    def generate(self, seq: DeviceSequence, tokens: Sequence[int], settings: SamplingSettings,
                 max_tokens: int, cached: Sequence[int] = (),
                 on_pick: Optional[Callable[[np.ndarray, int], None]] = None, reuse: bool = True) -> Generation:
        """An answer to the whole context `tokens`; seq holds `cached`, and keeps their common start.
        on_pick(logits [n_vocab] float32, token) sees the raw logits of every token picked (for logprobs);
        reuse=False restores no kept prompt state (the answer is the same either way, only slower)."""
        state = SamplerState.start(settings, self._dry_breakers(settings))

        def pick_next(logits, history, index):
            token = sample(logits, history, settings, index, state)
            if on_pick is not None:
                on_pick(logits, token)
            return token

        bad = next((t for t in tokens if not 0 <= t < self.tokenizer.n_vocab), None)
        if bad is not None:
            raise KineticError(f"token id {bad} is not in the model's vocabulary of {self.tokenizer.n_vocab}")
        keep = common_prefix(cached, tokens, limit=len(tokens) - 1)  # at least one token runs, for its logits
        states = self.prompt_states
        if states is not None and reuse:
            keep = states.restore(self.runner, seq, tokens, keep)
        seq.truncate(keep)
        on_finish = None if states is None else (lambda g, held: states.store(g.seq, held, g.timings))
        return Generation(self.runner, seq, tokens[keep:], pick_next, max_tokens, self.context_length,
                          frozenset(self.tokenizer.eog_ids), context=tokens[:keep], drafter=self.drafter,
                          on_finish=on_finish)
