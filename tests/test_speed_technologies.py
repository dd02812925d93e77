"""Speed technologies through their contract: attach(host) returns what a technology provides, the Session
collects it, --off takes the registered names only, and the start-up line lists what is registered."""

from __future__ import annotations

import types

import pytest
import typer

from kinetic.cli.options import speed_names
from kinetic.contracts import Provision, SpeedHost, SpeedTechnology
from kinetic.engine import session as session_module
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.hookspecs import hookimpl
import kinetic.plugins
from kinetic.plugins import load_plugins
from kinetic.server.parallel import slots_for
from kinetic.server.serving import speed_line
from kinetic.testing.gguf_factory import Dims, write_random_model
from kinetic_speed.plugin import CONVOY


class GuessNothing:
    """A Drafter that never guesses."""

    reads_hidden = False

    def begin(self, context, sequence): pass
    def propose(self, history, limit): return []
    def feedback(self, proposed, accepted): pass
    def kept(self): return 0.0
    def end(self, history): pass


def speed_plugin(*technologies: SpeedTechnology) -> types.ModuleType:
    module = types.ModuleType("more_speed")

    @hookimpl
    def register_speed_technologies(register):
        for technology in technologies:
            register(technology)

    module.register_speed_technologies = register_speed_technologies
    return module


@pytest.fixture
def hosts() -> list[SpeedHost]:
    return []


@pytest.fixture
def with_more_speed(monkeypatch, hosts):
    """The installed plugins plus two technologies: one that provides a drafter, one no device hosts."""
    drafter = GuessNothing()
    guess = SpeedTechnology("guess", "Guess", lambda host: hosts.append(host) or Provision(drafter=drafter))
    never = SpeedTechnology("never", "Never", lambda host: None)
    loaded = load_plugins(extra=[("more_speed", speed_plugin(guess, never))])
    monkeypatch.setattr(kinetic.plugins, "plugins", lambda: loaded)
    monkeypatch.setattr(session_module, "plugins", lambda: loaded)
    return drafter


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_random_model(tmp_path_factory.mktemp("speed") / "m.gguf", "llama", Dims(), "Q8_0")


def test_the_session_collects_what_each_technology_provides(with_more_speed, hosts, model, tmp_path):
    options = SessionOptions(device="cpu", ctx_size=64, off=("rad1",), state_dir=tmp_path)
    session = Session(model, options, announce=lambda line: None)
    assert session.drafter is with_more_speed and session.prompt_states is not None  # Guess's and Warm Start's
    (host,) = hosts
    assert (host.model_path, host.runner, host.state_dir) == (model, session.runner, tmp_path)
    assert [t.name for t in session.speed_on] == ["warm-start", "zero-wait", "shortlist", "torque", "convoy", "guess"]
    assert session.shared_passes and session.runs_ahead  # Convoy's and Zero Wait's
    assert speed_line(session) == ("Speed technologies on: Warm Start, Zero Wait, Shortlist, Torque, Convoy, Guess; "
                                   "off: RAD-1, Never")


def test_off_takes_registered_names(with_more_speed):
    assert speed_names("guess, rad1") == {"guess", "rad1"}
    assert speed_names(None) == frozenset()
    with pytest.raises(typer.BadParameter) as refused:
        speed_names("warp")
    assert str(refused.value) == ("unknown speed technology 'warp'; use a comma-separated list of "
                                  "rad1, warm-start, zero-wait, shortlist, torque, convoy, guess, never")


def test_the_start_up_line_lists_the_registered_technologies_only(model):
    session = Session(model, SessionOptions(device="cpu", ctx_size=64, off=("warm-start", "zero-wait", "convoy")),
                      announce=lambda line: None)
    assert speed_line(session) == "Speed technologies on: RAD-1, Shortlist, Torque; off: Warm Start, Zero Wait, Convoy"
    assert not session.shared_passes and slots_for(session, 4) == 1  # requests take turns


def test_convoy_attaches_only_where_the_runner_shares_passes(model, tmp_path):
    session = Session(model, SessionOptions(device="cpu", ctx_size=64), announce=lambda line: None)
    assert session.runner.shares_passes and CONVOY.attach(session.speed_host).shared_passes
    one_by_one = types.SimpleNamespace(shares_passes=False)  # as Vulkan, or CUDA with recurrent states
    assert CONVOY.attach(SpeedHost(model, one_by_one, tmp_path)) is None
