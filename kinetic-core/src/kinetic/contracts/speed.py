"""A speed technology: exact, on by default, turned off by name with --off.

When a Session has loaded a model onto its device, it calls attach(host) on every registered technology
not turned off, and collects the Provisions they return: the drafter the decoding loop checks guesses
from, the prompt-state store requests resume from. A technology never touches the Session itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from kinetic.contracts.device import Runner
from kinetic.contracts.drafting import Drafter
from kinetic.contracts.prompt_states import PromptStates


@dataclass(frozen=True)
class SpeedHost:
    """What a technology may read of the loaded model; the Session builds it once, after upload, and
    passes it to every attach()."""

    model_path: Path
    """The model file, for a technology that keys what it keeps by the model (Warm Start's identity)."""

    runner: Runner
    """The model on its device, as the engine runs it: a technology may run it, save and load sequences."""

    state_dir: Optional[Path]
    """The folder the user gave for kept states (--cache-dir); None: the technology's own default."""


@dataclass(frozen=True)
class Provision:
    """What attach() gives the Session; a field left None is something this technology does not provide.
    A Session holds at most one of each: a technology attached later replaces an earlier one's."""

    drafter: Optional[Drafter] = None
    """Used by every generation of the Session: guessed tokens, each kept only where plain decoding agrees."""

    prompt_states: Optional[PromptStates] = None
    """Asked by every generation for a kept state of its prompt's start, and given the state it leaves."""

    shared_passes: bool = False
    """The runner takes rows of several sequences in one pass: the server may run --parallel requests at once,
    each pass holding a step of every one (Convoy); without it, requests take turns."""

    runs_ahead: bool = False
    """A prompt may run ahead of its request while it is being written (Zero Wait: /v1/prefill, kinetic chat);
    without it, /v1/prefill runs nothing."""


@dataclass(frozen=True)
class SpeedTechnology:
    """A plugin registers one through register_speed_technologies; every Session attaches it unless the
    user turned it off (--off NAME), and the server's start-up line lists it as on or off."""

    name: str
    """The --off name: rad1, warm-start, ..."""

    title: str
    """As printed in `Speed technologies on: ...; off: ...`: RAD-1, Warm Start, ..."""

    attach: Callable[[SpeedHost], Optional[Provision]]
    """Called by the Session once per model load, after the upload (and again by `kinetic bench` before
    each measured run, for a fresh start): what the technology provides to that model on that device,
    or None when the device cannot host it (the technology is then listed as off)."""
