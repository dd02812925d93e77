"""The kinetic-speed plugin: registers RAD-1, Warm Start, Zero Wait, Shortlist, Torque and Convoy."""

import os
from pathlib import Path
from typing import Optional

from kinetic.contracts import Provision, SpeedHost, SpeedTechnology
from kinetic.hookspecs import hookimpl
from kinetic.paths import cache_dir

from kinetic_speed.rad1 import Rad1Drafter, TokenLog
from kinetic_speed.warm_start import WarmStart
from kinetic_speed.warm_start.identity import build_identity, model_identity


def _attach_rad1(host: SpeedHost) -> Provision:
    """Drafts from the context, earlier requests and, where the runner runs the model's prediction block, that."""
    predictor = getattr(host.runner, "predictor", lambda: None)()
    return Provision(drafter=Rad1Drafter(TokenLog(), predictor))


def _attach_warm_start(host: SpeedHost) -> Provision:
    """States under --cache-dir, else $KINETIC_WARM_DIR, else kinetic/warm in the user cache; every device
    hosts it, since the runner contract pairs seq.save with runner.load."""
    identity = {"model": model_identity(host.model_path), "build": build_identity(host.runner)}
    folder = host.state_dir or Path(os.environ.get("KINETIC_WARM_DIR") or cache_dir("warm"))
    return Provision(prompt_states=WarmStart(folder, identity))


def _attach_zero_wait(host: SpeedHost) -> Provision:
    """Prompts run ahead in the batches their requests would run (kinetic.engine.prefill): any device."""
    return Provision(runs_ahead=True)


def _attach_shortlist(host: SpeedHost) -> Optional[Provision]:
    """Rows that read only their top k logits (Row.top) get those and the ones that could be among them, where
    the runner keeps what it needs for that (the CPU, for a Q8_0 output layer); a runner that does not say,
    does not."""
    return _started(host, "start_shortlist")


def _attach_torque(host: SpeedHost) -> Optional[Provision]:
    """Passes of a few rows (decoding, drafted rows, Convoy's steps) as one parallel call, where the runner can
    run every block of the model so (the CPU, for attention and gated feed-forward blocks); a runner that does
    not say, does not."""
    return _started(host, "start_torque")


def _started(host: SpeedHost, start: str) -> Optional[Provision]:
    """Provision() where the runner has the method `start` and it says it started, else None."""
    method = getattr(host.runner, start, None)
    return Provision() if method is not None and method() else None


def _attach_convoy(host: SpeedHost) -> Optional[Provision]:
    """Requests side by side where the runner reads each weight once for all the sequences of a pass (its
    kernels are batch-invariant, so every answer stays its own); a runner that does not say, does not."""
    return Provision(shared_passes=True) if getattr(host.runner, "shares_passes", False) else None


RAD1 = SpeedTechnology(name="rad1", title="RAD-1", attach=_attach_rad1)
WARM_START = SpeedTechnology(name="warm-start", title="Warm Start", attach=_attach_warm_start)
ZERO_WAIT = SpeedTechnology(name="zero-wait", title="Zero Wait", attach=_attach_zero_wait)
SHORTLIST = SpeedTechnology(name="shortlist", title="Shortlist", attach=_attach_shortlist)
TORQUE = SpeedTechnology(name="torque", title="Torque", attach=_attach_torque)
CONVOY = SpeedTechnology(name="convoy", title="Convoy", attach=_attach_convoy)


@hookimpl
def register_speed_technologies(register):
    register(RAD1)
    register(WARM_START)
    register(ZERO_WAIT)
    register(SHORTLIST)
    register(TORQUE)
    register(CONVOY)
