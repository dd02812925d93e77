"""`kinetic run`: one prompt through the chat template, the answer streamed to stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Optional

from kinetic.cli.generating import answer, open_session, ready_sequence, template_kwargs
from kinetic.cli.receipts import write_receipt
from kinetic.cli.usage import UsageError
from kinetic.errors import KineticError
from kinetic.receipt import read_key
from kinetic.stores import resolve_model


def run_command(model_option: Optional[Path], words: list[str], prompt_option: Optional[str],
                options: Mapping[str, Any]) -> None:
    model, prompt = model_and_prompt(model_option, words, prompt_option)
    if options.get("sign_key") is not None:
        if options.get("receipt") is None:
            raise UsageError("--sign-key signs a receipt: give --receipt FILE too")
        read_key(Path(options["sign_key"]))  # a bad key is said before any work
    session = open_session(model, options)
    messages = ([{"role": "system", "content": options["system"]}] if options["system"] else [])
    messages.append({"role": "user", "content": prompt})
    tokens = session.chat_prompt(messages, **template_kwargs(options))
    answered = answer(session, ready_sequence(session), tokens, (), options)
    if options.get("receipt") is not None:
        write_receipt(session, messages, tokens, answered, options)


def model_and_prompt(model_option: Optional[Path], words: list[str],
                     prompt_option: Optional[str]) -> tuple[Path, str]:
    """`run MODEL [PROMPT]`, `run -m MODEL [PROMPT]`, `-p PROMPT`, or the prompt from stdin; MODEL a file or a
    model's name (kinetic.stores)."""
    positional = list(words)
    if len(positional) > (1 if model_option else 2):
        raise UsageError("too many arguments: quote the prompt, e.g. kinetic run model.gguf \"Hello there\"")
    if model_option is None:
        if not positional:
            raise UsageError("missing the model: give a .gguf file as the first argument or with -m")
        model_option, positional = Path(positional[0]), positional[1:]
    if prompt_option is not None and positional:
        raise UsageError("give the prompt once: as an argument or with -p, not both")
    prompt = prompt_option if prompt_option is not None else (positional[0] if positional else None)
    if prompt is None:
        if sys.stdin.isatty():
            raise UsageError("missing the prompt: give it as an argument, with -p, or on stdin")
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise KineticError("the prompt is empty")
    return resolve_model(model_option), prompt
