"""RAD-1: drafts from the context and from earlier requests, checked in one pass (engine/drafting.py)."""

from kinetic_speed.rad1.drafter import Rad1Drafter
from kinetic_speed.rad1.lookup import TokenLog

__all__ = ["Rad1Drafter", "TokenLog"]
