"""A .ktc file's execution profile (docs/FORMAT.md): what a pass of each size costs on the kind of device the file
was converted on, measured then, so that on that device class the Convoy prices its passes (engine/pass_costs.py)
from its first request instead of from what it has measured so far."""

from __future__ import annotations

import time
from typing import Any, Optional

from kinetic.contracts.device import Row

SIZES = (1, 2, 4, 8, 16, 32)  # rows of the passes measured
REPEATS = 3  # of each size, the fastest kept


def measured(session) -> dict[str, Any]:
    """The profile of session's runner: its device class and the seconds of a pass of each of SIZES rows
    (a forward of that many new rows, the last asking for logits), the fastest of REPEATS."""
    session.settle()
    runner = session.runner
    seq = runner.new_sequence()
    seconds = {}
    for size in SIZES:
        best = float("inf")
        for _ in range(REPEATS):
            seq.truncate(0)
            rows = [Row(seq, 1 + i, i, parent=i - 1, logits=i == size - 1) for i in range(size)]
            started = time.perf_counter()
            runner.forward(rows)
            best = min(best, time.perf_counter() - started)
        seconds[str(size)] = best
    return {"device_class": runner.device_class, "pass_seconds": seconds}


def pass_seconds(profile: Optional[dict[str, Any]], device_class: str) -> dict[int, float]:
    """The profile's seconds by pass size where it was measured on device_class; none otherwise."""
    if not profile or profile.get("device_class") != device_class:
        return {}
    try:
        return {int(rows): float(seconds) for rows, seconds in profile["pass_seconds"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}
