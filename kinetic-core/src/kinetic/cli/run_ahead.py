"""Zero Wait in `kinetic chat`: while a message is typed or pasted, the conversation with it runs ahead on
its own thread, up to before the message's last word, so that after Enter only the rest runs. The answer
waits at most one prompt batch for it, and gets the same tokens as without it (kinetic.engine.prefill)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Optional

from kinetic.engine.generate import run_alone

if TYPE_CHECKING:
    from kinetic.cli.chat import Conversation


class RunAhead:
    """typed(text) after every edit of the message; hold() before the answer, resume() after it. It runs on
    the conversation's sequence and keeps its cached tokens (cli.chat.Conversation)."""

    def __init__(self, conversation: Conversation):
        self.conversation = conversation
        self._cond = threading.Condition()
        self._draft: Optional[str] = None  # the newest text not yet run
        self._running = self._held = False
        threading.Thread(target=self._work, name="kinetic-run-ahead", daemon=True).start()

    def typed(self, text: str) -> None:
        with self._cond:
            self._draft = text if text.strip() else None
            self._cond.notify_all()

    def hold(self) -> None:
        """No run starts, and the one under way stops after its batch; returns once it has."""
        with self._cond:
            self._held, self._draft = True, None
            while self._running:
                self._cond.wait()

    def resume(self) -> None:
        with self._cond:
            self._held = False

    def _work(self) -> None:
        while True:
            with self._cond:
                while self._draft is None or self._held:
                    self._cond.wait()
                text, self._draft, self._running = self._draft, None, True
            try:
                self._run(text)
            finally:
                with self._cond:
                    self._running = False
                    self._cond.notify_all()

    def _run(self, text: str) -> None:
        talk = self.conversation
        messages = [*talk.messages, {"role": "user", "content": text}]
        tokens, upto = talk.session.draft_prompt(messages, **talk.template_kwargs())
        give_way = lambda: self._draft is not None or self._held  # noqa: E731
        prefill = talk.session.prefill(talk.seq, tokens, talk.cached, upto, give_way)
        list(run_alone(talk.session.runner, prefill.steps()))
        talk.cached = tokens[: talk.seq.n_tokens]
