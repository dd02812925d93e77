"""What a prompt-state cache gives the engine (Warm Start is one): a sequence resumed from the longest
prefix an earlier request left behind. Because a batch gives each row exactly what it gives alone
(docs/exactness.md, sections 1 and 6), a resumed sequence holds bit for bit what recomputing would give."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from kinetic.contracts.device import DeviceSequence, Runner


def common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    """How many of the first `limit` tokens a and b share."""
    n = 0
    for x, y in zip(a[:limit], b[:limit]):
        if x != y:
            break
        n += 1
    return n


class PromptStates(Protocol):
    def restore(self, runner: Runner, seq: DeviceSequence, tokens: Sequence[int], held: int) -> int:
        """Put into seq the longest kept state of a start of tokens (never all of them: one must run),
        when that is longer than the held tokens seq shares with them and faster than computing the
        difference; the number of tokens of `tokens` seq now holds."""

    def store(self, seq: DeviceSequence, tokens: Sequence[int], timings: Any) -> None:
        """Keep seq's state, which holds these tokens; timings (engine.generate.Timings) tell the prompt
        speed that a restore must beat."""
