"""The kinetic-speed plugin: registers RAD-1 and Warm Start."""

import os
from pathlib import Path

from kinetic.hookspecs import hookimpl
from kinetic.paths import cache_dir
from kinetic.contracts import SpeedTechnology

from kinetic_speed.rad1 import Rad1Drafter, TokenLog
from kinetic_speed.warm_start import WarmStart
from kinetic_speed.warm_start.identity import build_identity, model_identity


def _attach_rad1(session) -> bool:
    session.drafter = Rad1Drafter(TokenLog())
    return True


def _attach_warm_start(session) -> bool:
    """States under --cache-dir, else $KINETIC_WARM_DIR, else kinetic/warm in the user cache; only on a
    device whose runner loads saved sequences (the device contract pairs seq.save with runner.load)."""
    if not hasattr(session.runner, "load"):
        return False
    identity = {"model": model_identity(session.path), "build": build_identity(session.runner)}
    folder = session.state_dir or Path(os.environ.get("KINETIC_WARM_DIR") or cache_dir("warm"))
    session.prompt_states = WarmStart(folder, identity)
    return True


RAD1 = SpeedTechnology(name="rad1", title="RAD-1", attach=_attach_rad1)
WARM_START = SpeedTechnology(name="warm-start", title="Warm Start", attach=_attach_warm_start)


@hookimpl
def register_speed_technologies(register):
    register(RAD1)
    register(WARM_START)
