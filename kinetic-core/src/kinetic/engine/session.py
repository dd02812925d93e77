"""A model loaded and ready to answer: its stack on a device, its tokenizer and chat template."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Optional, Sequence

import numpy as np

from kinetic.chat.prompt import chat_prompt_tokens
from kinetic.chat.template import ChatTemplate, load_chat_template
from kinetic.constraints import Grammar, Matcher
from kinetic.contracts.device import DeviceSequence, Row, UploadOptions
from kinetic.contracts.drafting import Drafter
from kinetic.contracts.model_file import ModelFile
from kinetic.contracts.prompt_states import PromptStates, common_prefix
from kinetic.contracts.speed import Provision, SpeedHost, SpeedTechnology
from kinetic.engine.devices import open_runner
from kinetic.engine.generate import Generation, check_prompt
from kinetic.engine.options import SessionOptions
from kinetic.engine.prefill import Prefill, ahead_end
from kinetic import progress
from kinetic.errors import KineticError
from kinetic.model import open_model
from kinetic.model.load import load_stack
from kinetic.plugins import plugins
from kinetic.sampling.chain import SamplerState, exact_top, sample
from kinetic.sampling.dry import NO_BREAKERS, DryBreakers, resolve_breakers
from kinetic.sampling.settings import SamplingSettings, resolve_settings, with_fresh_seed
from kinetic.tokenizer import Tokenizer

LAST_WORD = re.compile(r"\S*\s*$")  # the word being written, and the white space after it
DEFAULT_CONTEXT = 32768
WARM_UP_ROWS = (1, 16)  # a decoding step, then a batch as large as an AMX tile: every kind of kernel a request uses


def context_for(requested: Optional[int], trained: int) -> int:
    """-c: None for 32768 or less if the model was trained on less, 0 for all it supports; explicit wins."""
    if requested is None:
        return min(DEFAULT_CONTEXT, trained)
    return trained if requested <= 0 else requested


def check_gpu_layers(requested: Optional[int], model: ModelFile) -> None:
    """--gpu-layers N: the whole model runs on one device, so N must cover every layer (or be 0, the CPU);
    until layers can be split between devices, fewer is refused rather than ignored."""
    layers = int(model.arch_value("block_count", 0))
    if requested is not None and 0 < requested < layers:
        raise KineticError(f"--gpu-layers {requested}: Kinetic runs all {layers} layers of this model on one "
                           "device until layers can be split; use --gpu-layers all, or --device cpu")


def attach_speed(host: SpeedHost, off: Collection[str]) -> tuple[list[SpeedTechnology], Provision]:
    """The registered speed technologies not turned off that attach to host, and what they provide together
    (a later technology's drafter or prompt states replace an earlier one's)."""
    on, drafter, prompt_states, shared, ahead = [], None, None, False, False
    for technology in plugins().speed_technologies:
        provision = None if technology.name in off else technology.attach(host)
        if provision is None:
            continue
        on.append(technology)
        drafter = drafter if provision.drafter is None else provision.drafter
        prompt_states = prompt_states if provision.prompt_states is None else provision.prompt_states
        shared = shared or provision.shared_passes
        ahead = ahead or provision.runs_ahead
    return on, Provision(drafter, prompt_states, shared, ahead)


class Session:
    """Everything one loaded model needs to answer prompts."""

    def __init__(self, path: Path, options: SessionOptions = SessionOptions(),
                 announce: Callable[[str], None] = progress.say):
        self.path = Path(path)
        self.options = options
        self.name = self.path.stem
        self._template_file = options.chat_template_file
        self._template: Optional[ChatTemplate] = None
        self._breakers: dict[tuple[str, ...], DryBreakers] = {}
        with progress.showing(f"loading {self.path.name}"):
            self.model = open_model(self.path)
            self.tokenizer = Tokenizer.from_metadata(self.model.metadata)
            self.stack = stack = load_stack(self.model)
            check_gpu_layers(options.gpu_layers, self.model)
            trained = int(self.model.arch_value("context_length", DEFAULT_CONTEXT))
            self.context_length = context_for(options.ctx_size, trained)
            upload = UploadOptions(threads=options.threads, context_length=self.context_length,
                                   context_given=options.ctx_size is not None, cache_types=options.cache_types,
                                   gpu_memory=options.gpu_memory)
            device = "cpu" if options.gpu_layers == 0 else options.device  # -ngl 0: no layer on a GPU
            wants_gpu = options.gpu_layers not in (None, 0)
            self.device, self.runner = open_runner(stack, device, upload, announce, wants_gpu)
        self.context_length = self.runner.context_length  # less where the device shrank it to fit
        self.speed_host = SpeedHost(self.path, self.runner, options.state_dir)
        self.speed_on, provided = attach_speed(self.speed_host, options.off)
        self.speed_off = [t for t in plugins().speed_technologies if t not in self.speed_on]
        self.drafter: Optional[Drafter] = provided.drafter
        self.prompt_states: Optional[PromptStates] = provided.prompt_states
        self.shared_passes = provided.shared_passes
        self.runs_ahead = provided.runs_ahead

    @property
    def template(self) -> ChatTemplate:
        """The chat template, read when first needed (a base model may have none)."""
        if self._template is None:
            self._template = load_chat_template(self.model.metadata, self._template_file)
        return self._template

    def chat_prompt(self, messages: Sequence[Mapping[str, Any]], tools: Optional[Sequence[Mapping[str, Any]]] = None,
                    **template_kwargs: Any) -> list[int]:
        return chat_prompt_tokens(self.template, self.tokenizer, messages, tools, **template_kwargs)

    def draft_prompt(self, messages: Sequence[Mapping[str, Any]], tools: Optional[Sequence[Mapping[str, Any]]] = None,
                     **template_kwargs: Any) -> tuple[list[int], int]:
        """Zero Wait: the prompt of messages whose last one is still being written, and how much of it may run
        ahead: the tokens it shares with the prompt of that message without its last word (which may still grow,
        and whose tokens may merge with the next keystroke)."""
        tokens = self.chat_prompt(messages, tools, **template_kwargs)
        *before, last = messages
        content = last.get("content")
        cut = {**last, "content": LAST_WORD.sub("", content)} if isinstance(content, str) else last
        written = self.chat_prompt([*before, cut], tools, **template_kwargs)
        return tokens, common_prefix(tokens, written, limit=len(tokens))

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

    def settle(self) -> None:
        """Wait until the speed technologies whose kernels compile in another process on a first load have
        started (the CPU's, kinetic_cpu.aside), as a measurement of their speed must; a runner without any has
        no settle()."""
        settle = getattr(self.runner, "settle", None)
        if settle is not None:
            settle()

    def warm_up(self, seq: DeviceSequence) -> None:
        """Run a token and a batch through seq and forget them, so that the kernels load (and compile, the
        first time) now instead of in the first request, as llama.cpp's warm-up run does. Where the runner has
        warming() (the CPU's first load: kinetic_cpu.aside), the passes run in it first, and again if it left
        products out."""
        warming = getattr(self.runner, "warming", None)
        if warming is not None:
            with warming() as left_out:
                self._warm_passes(seq)
            if not left_out:
                return
        self._warm_passes(seq)

    def _warm_passes(self, seq: DeviceSequence) -> None:
        position = 0
        for n in WARM_UP_ROWS:
            n = min(n, self.context_length - 1 - position)
            if n <= 0:
                break
            top = 1 if n == 1 else 0  # a greedy step's logits (Shortlist's kernels), then the whole layer's
            self.runner.forward([Row(seq, 0, position + i, parent=i - 1, logits=i == n - 1, top=top) for i in range(n)])
            position += n
        seq.truncate(0)

    def resume(self, seq: DeviceSequence, tokens: Sequence[int], cached: Sequence[int], reuse: bool = True) -> int:
        """Where a run of tokens starts on seq, which holds cached: their common start (at least one token is
        left to run, for its logits), or further where a kept prompt state was restored; seq is cut there."""
        keep = common_prefix(cached, tokens, limit=len(tokens) - 1)
        if self.prompt_states is not None and reuse:
            keep = self.prompt_states.restore(self.runner, seq, tokens, keep)
        seq.truncate(keep)
        return keep

    def prefill(self, seq: DeviceSequence, tokens: Sequence[int], cached: Sequence[int], upto: int,
                give_way: Callable[[], bool]) -> Prefill:
        """tokens (a prompt to come) run ahead on seq, which holds cached, up to the last prompt batch boundary
        at or before upto, from where the request would start (Zero Wait)."""
        check_prompt(tokens, self.tokenizer.n_vocab, self.context_length)
        start = self.resume(seq, tokens, cached)
        return Prefill(seq, tokens, start, ahead_end(start, min(upto, len(tokens) - 1)), give_way)

    def generate(self, seq: DeviceSequence, tokens: Sequence[int], settings: SamplingSettings,
                 max_tokens: int, cached: Sequence[int] = (),
                 on_pick: Optional[Callable[[np.ndarray, int], None]] = None, reuse: bool = True,
                 grammar: Optional[Grammar] = None, drafter: Optional[Drafter] = None) -> Generation:
        """An answer to the whole context `tokens`; seq holds `cached`, and keeps their common start.
        on_pick(logits [n_vocab] float32, token) sees the raw logits of every token picked (for logprobs);
        reuse=False restores no kept prompt state (the answer is the same either way, only slower);
        grammar: every token is picked among those the grammar allows next; drafter: the one to draft with, where
        answers are generated side by side (None: the session's)."""
        check_prompt(tokens, self.tokenizer.n_vocab, self.context_length)
        state = SamplerState.start(settings, self._dry_breakers(settings))
        matcher = None if grammar is None else Matcher(grammar, self.tokenizer)

        def pick_next(logits, history, index):
            allowed = logits if matcher is None else matcher.mask(logits)
            token = sample(allowed, history, settings, index, state)
            if matcher is not None:
                matcher.accept(token)
            if on_pick is not None:
                on_pick(logits, token)
            return token

        keep = self.resume(seq, tokens, cached, reuse)
        states = self.prompt_states
        on_finish = None if states is None else (lambda g, held: states.store(g.seq, held, g.timings))
        top = exact_top(settings, self.tokenizer.n_vocab) if matcher is None and on_pick is None else 0
        return Generation(self.runner, seq, tokens[keep:], pick_next, max_tokens, self.context_length,
                          frozenset(self.tokenizer.eog_ids), context=tokens[:keep], drafter=drafter or self.drafter,
                          on_finish=on_finish, top=top)
