"""llama.cpp's flags on Kinetic's command line: renamed, accepted and not needed, or refused with the one line
saying what to use (the table is llama_flag_table). translate() rewrites argv before typer parses it, so every
command takes the spellings llama-cli and llama-server take, and no llama.cpp flag ends in "No such option".
"""

from __future__ import annotations

import re
from collections import deque
from typing import Mapping

from kinetic.cli.llama_flag_table import ACCEPTED, ACCEPTED_IF, ACCEPTED_IN, REFUSED, REFUSED_IN, RENAMED

Options = Mapping[str, bool]  # a command's option spellings -> whether each takes a value
A_FLAG = re.compile(r"--?[A-Za-z]")  # what no value of an accepted flag looks like (-1 is a value)


class RefusedFlag(Exception):
    """A llama.cpp flag with no equivalent; str() is the one line to print."""


def translate(argv: list[str], commands: Mapping[str, Options]) -> list[str]:
    """argv (`COMMAND ARGS...`) with llama.cpp spellings rewritten and accepted flags removed; commands are each
    command's own options. Raises RefusedFlag for a flag the command does not take."""
    if "--version" in argv:
        return ["--version"]  # llama-server --version: anywhere on the line, as llama.cpp takes it
    if not argv or argv[0] not in commands:
        return list(argv)
    command, own = argv[0], commands[argv[0]]
    out = [command]
    args = deque(argv[1:])
    while args:
        arg = args.popleft()
        out += _one(arg, args, command, own, commands) if arg.startswith("-") and arg != "-" else [arg]
    return out


def _one(arg: str, args: deque[str], command: str, own: Options, commands: Mapping[str, Options]) -> list[str]:
    """The words one flag (and its value) becomes on `command`'s command line."""
    flag, equals, value = arg.partition("=")
    name = flag if flag in own else RENAMED.get(flag, flag)
    if name in own:
        given = [name + equals + value]
        following = [args.popleft()] if own[name] and not equals and args else []  # whatever it looks like
        return given + following
    refusal = REFUSED_IN.get(command, {}).get(flag) or REFUSED_IN.get(command, {}).get(name)
    if refusal:
        raise RefusedFlag(f"{flag} is a llama.cpp flag kinetic {command} does not take: {refusal}.")
    if flag in ACCEPTED_IN.get(command, ()):
        return []
    if flag in ACCEPTED_IF:
        values, reason = ACCEPTED_IF[flag]
        given_value = value if equals else (args.popleft() if args else "")
        if given_value not in values:
            raise RefusedFlag(f"{flag} {given_value} is not available: {reason}.")
        return []
    if flag in ACCEPTED:
        if ACCEPTED[flag] and not equals and args and not A_FLAG.match(args[0]):
            args.popleft()  # older llama.cpp builds took -fa alone: a flag after it is no value of it
        return []
    if flag in REFUSED:
        raise RefusedFlag(f"{flag} is a llama.cpp flag: {REFUSED[flag]}.")
    elsewhere = [other for other, options in commands.items() if name in options]
    if elsewhere:
        raise RefusedFlag(f"kinetic {command} does not take {flag}: it works with kinetic {', '.join(elsewhere)}.")
    return [arg]  # not a llama.cpp flag: typer says it is no option
