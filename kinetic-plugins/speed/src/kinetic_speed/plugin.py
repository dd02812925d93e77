"""The kinetic-speed plugin: registers RAD-1."""

from kinetic.hookspecs import hookimpl
from kinetic.spec import SpeedTechnology

from kinetic_speed.rad1 import Rad1Drafter, TokenLog


def _attach_rad1(session) -> None:
    session.drafter = Rad1Drafter(TokenLog())


RAD1 = SpeedTechnology(name="rad1", title="RAD-1", attach=_attach_rad1)


@hookimpl
def register_speed_technologies(register):
    register(RAD1)
