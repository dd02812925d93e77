"""`kinetic chat`: a conversation in the terminal, one message per line; each turn reuses the cache."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from kinetic.cli.constraints import answer_grammar
from kinetic.cli.generating import Answered, answer, open_session, ready_sequence
from kinetic.cli.options import sampling_overrides
from kinetic.cli.receipts import write_receipt
from kinetic.cli.run_ahead import RunAhead
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.receipt import read_key

HELP = """/clear            start a new conversation
/system TEXT      set the system prompt and start over; /system alone clears it
/think            turn the model's reasoning on or off
/temp X, /top-p X, /top-k N, /min-p X   change sampling for the next answers
/seed N           make answers repeatable; /seed alone picks a fresh seed each time
/sampling         show the sampling settings
/receipt [FILE]   save the receipt of the last answer (receipt.json), for kinetic verify-receipt
/help             this list
/exit, /quit      quit (as Ctrl+D does)"""

DEFAULT_RECEIPT = "receipt.json"
SETTINGS = {"/temp": ("temp", float), "/top-p": ("top_p", float), "/top-k": ("top_k", int), "/min-p": ("min_p", float)}


@dataclass
class Conversation:
    session: Session
    options: dict[str, Any]
    system: Optional[str]
    thinking: Optional[bool]
    messages: list[dict[str, str]] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)  # the tokens the sequence holds
    last: Optional[tuple[list[dict[str, str]], list[int], Answered]] = None  # the last answer's messages, prompt

    def __post_init__(self) -> None:
        self.seq = ready_sequence(self.session)
        self.clear()

    def clear(self) -> None:
        self.messages = [{"role": "system", "content": self.system}] if self.system else []

    def template_kwargs(self) -> dict[str, Any]:
        return {} if self.thinking is None else {"enable_thinking": self.thinking}

    def say(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        tokens = self.session.chat_prompt(self.messages, **self.template_kwargs())
        answered = answer(self.session, self.seq, tokens, self.cached, self.options)
        self.last, reply = (list(self.messages), tokens, answered), answered.tokens
        self.cached = (tokens + reply)[: self.seq.n_tokens]
        self.messages.append({"role": "assistant", "content": self.session.tokenizer.decode(reply, special=False)})


def chat_command(model: Path, options: dict[str, Any]) -> None:
    if options.get("sign_key") is not None:
        read_key(Path(options["sign_key"]))  # a bad key is said before any work
    session = open_session(model, options)
    thinking = None if options.get("reasoning") is None else options["reasoning"] != "off"
    conversation = Conversation(session, dict(options), options.get("system"), thinking)
    interactive = sys.stdin.isatty()
    if interactive:
        print(f"Chatting with {session.name} on {session.runner.device_name}. /help lists the commands.")
    ahead = RunAhead(conversation) if interactive and session.runs_ahead else None
    for message in messages(interactive, ahead.typed if ahead else None):
        if message.startswith("/"):
            if not command(conversation, message):
                return
        elif message.strip():
            if ahead is not None:
                ahead.hold()
            conversation.say(message)
            if ahead is not None:
                ahead.resume()


def messages(interactive: bool, typed: Optional[Callable[[str], None]] = None) -> Iterator[str]:
    """Lines from stdin; a line ending in a backslash goes on to the next. typed(text) sees the message
    being written after every edit (Zero Wait), where a terminal is read."""
    read = line_reader(interactive, typed)
    pending: list[str] = []
    while True:
        try:
            line = read(pending)
        except EOFError:
            return
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        yield "\n".join(pending + [line])
        pending = []


def line_reader(interactive: bool, typed: Optional[Callable[[str], None]]) -> Callable[[list[str]], str]:
    """reader(pending lines) -> the next line; with typed, from prompt_toolkit, whose every edit is seen."""
    if typed is None:
        return lambda pending: input("> " if interactive and not pending else ("  " if interactive else ""))
    from prompt_toolkit import PromptSession

    prompt: PromptSession = PromptSession()
    written: list[str] = []  # the message's lines before the one being edited
    prompt.default_buffer.on_text_changed += lambda buffer: typed("\n".join([*written, buffer.text]))

    def reader(pending: list[str]) -> str:
        written[:] = pending
        return prompt.prompt("  " if pending else "> ")

    return reader


def command(conversation: Conversation, line: str) -> bool:
    """Carry out one /command; False to quit."""
    name, _, argument = line.partition(" ")
    argument = argument.strip()
    if name in ("/exit", "/quit"):
        return False
    if name == "/clear":
        conversation.clear()
    elif name == "/system":
        conversation.system = argument or None
        conversation.clear()
    elif name == "/think":
        conversation.thinking = not conversation.thinking
        print(f"reasoning {'on' if conversation.thinking else 'off'}")
    elif name in SETTINGS:
        set_number(conversation.options, *SETTINGS[name], argument)
    elif name == "/seed":
        conversation.options["seed"] = int(argument) if argument.lstrip("-").isdigit() else None
    elif name == "/sampling":
        print(conversation.session.settings(sampling_overrides(conversation.options)))
    elif name == "/receipt":
        save_receipt(conversation, Path(argument or DEFAULT_RECEIPT))
    elif name == "/help":
        print(HELP)
    else:
        print(f"unknown command {name}; /help lists them")
    return True


def save_receipt(conversation: Conversation, path: Path) -> None:
    """The last answer's receipt into path (signed with --sign-key where given)."""
    if conversation.last is None:
        print("no answer yet: /receipt saves the receipt of the last answer")
        return
    if answer_grammar(conversation.options) is not None:
        print("no receipt saved: a receipt does not record a grammar or JSON schema yet")
        return
    messages, tokens, answered = conversation.last
    try:
        write_receipt(conversation.session, messages, tokens, answered, {**conversation.options, "receipt": path})
    except (KineticError, OSError) as error:
        print(f"no receipt saved: {error}")
        return
    print(f"receipt saved to {path}; check it with kinetic verify-receipt {path}")


def set_number(options: dict[str, Any], key: str, kind: type, text: str) -> None:
    try:
        options[key] = kind(text)
    except ValueError:
        print(f"{text!r} is not a {kind.__name__}")

