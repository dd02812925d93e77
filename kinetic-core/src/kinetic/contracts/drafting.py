"""What a draft source gives the decoding loop (RAD-1 is one): guessed next tokens, checked in one pass.

The loop runs the last picked token and the draft as one linear batch, then picks each next token from
its row's logits exactly as plain decoding would (the same history, the same uniform u_i); a guess is
kept only while it equals the token picked at its place, so the answer is the plain answer by
construction (docs/exactness.md, section 5). Batch invariance makes each row's logits those of one-by-one
decoding.
"""

from __future__ import annotations

from typing import Protocol, Sequence

from kinetic.contracts.device import DeviceSequence


class Drafter(Protocol):
    reads_hidden: bool  # propose reads the sequence's hidden states (DeviceSequence.hidden): every row the
    # generation runs asks for its own (Row.hidden)

    def begin(self, context: Sequence[int], sequence: DeviceSequence) -> None:
        """A generation on `sequence` starts after these tokens (what the sequence holds and the prompt)."""

    def propose(self, history: Sequence[int], limit: int) -> list[int]:
        """Up to limit guesses of the tokens after history (empty: decode one token plainly)."""

    def feedback(self, proposed: int, accepted: int) -> None:
        """Of the last proposal's `proposed` guesses, the first `accepted` were right."""

    def kept(self) -> float:
        """How often its recent guesses were right, counting a guess only where every guess before it in its
        draft was right (so guess k of the next draft is right with about kept() ** k): what a driver sharing a
        pass among generations (the server's Convoy) weighs a draft's rows by."""

    def end(self, history: Sequence[int]) -> None:
        """The generation is over; history is everything it saw and wrote."""

    def fork(self) -> "Drafter":
        """A drafter for generations that run beside this one's (the server's slots); the two may share what
        they learn from finished answers, never the state of a generation under way."""
