"""Stop strings over streamed text: hold back what may be the start of one, cut at the first found."""

from __future__ import annotations

from typing import Sequence

from kinetic.text import partial_end


class StopScanner:
    def __init__(self, stops: Sequence[str]):
        self.stops = [stop for stop in stops if stop]
        self.pending = ""  # text not yet released: it may begin a stop string
        self.found: str | None = None  # the stop string that ended the text

    def feed(self, text: str) -> str:
        """The text that is certainly not part of a stop string; after a stop, nothing."""
        if self.found is not None:
            return ""
        self.pending += text
        if not self.stops:
            out, self.pending = self.pending, ""
            return out
        hits = [(self.pending.find(stop), stop) for stop in self.stops]
        hits = [(at, stop) for at, stop in hits if at >= 0]
        if hits:
            at, self.found = min(hits)
            out, self.pending = self.pending[:at], ""
            return out
        keep = max((partial_end(self.pending, stop) for stop in self.stops), default=0)
        cut = len(self.pending) - keep
        out, self.pending = self.pending[:cut], self.pending[cut:]
        return out

    def finish(self) -> str:
        """What was held back, when the answer ended without a stop string."""
        out, self.pending = self.pending, ""
        return out if self.found is None else ""
