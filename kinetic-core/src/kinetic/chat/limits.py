"""Bounds on a rendering chat template: a deadline for its loops and calls, a cap on the size of its values.

Every unbounded amount of work a template can do passes through a for-loop iteration or a call (macros,
recursive loops and methods are calls), and both check the deadline. Between two checks a template runs
one operator, filter or call, whose work is bounded by its inputs; values are capped, so a template that
doubles a string in a loop stops at the cap instead of filling memory. One call can still allocate what
its arguments ask for at once (a padding width of 10**9 in str.center or a format spec).
"""

from __future__ import annotations

import operator
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable, Iterable, Iterator

from kinetic.errors import ChatTemplateError

MAX_ITEMS = 1 << 25  # characters of a string or items of a container: many times the longest prompt
MAX_INT_BITS = 1 << 16

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("chat_template_deadline", default=None)

BINARY_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "*": operator.mul,
    "%": operator.mod,
    "**": operator.pow,
}


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Templates rendered inside this block fail once they have run for more than seconds."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def check_time() -> None:
    current = _deadline.get()
    if current is not None and time.monotonic() > current[0]:
        raise ChatTemplateError(f"it ran for more than {current[1]:g} s; does it loop forever?")


def check_size(value: Any) -> Any:
    """value itself, unless it is larger than any template needs."""
    if isinstance(value, (str, list, tuple, dict)) and len(value) > MAX_ITEMS:
        raise ChatTemplateError(f"it built a value of {len(value):,} items; the limit is {MAX_ITEMS:,}")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ChatTemplateError(f"it built a number of {value.bit_length():,} bits; the limit is {MAX_INT_BITS:,}")
    return value


def paced(iterable: Iterable[Any]) -> Iterator[Any]:
    """The items of a template's for-loop, checking the deadline before each one."""
    for item in iterable:
        check_time()
        yield item


def joined(pieces: Iterable[str]) -> str:
    """A template's output (or a macro's, or a block's), refused once it grows past the cap."""
    parts = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > MAX_ITEMS:
            raise ChatTemplateError(f"its output grew past {MAX_ITEMS:,} characters")
        parts.append(piece)
    return "".join(parts)


def binary_operation(symbol: str, left: Any, right: Any) -> Any:
    """left <symbol> right, refused before it starts when its result would be too large."""
    if symbol == "*":
        _check_repetition(left, right)
        _check_repetition(right, left)
    if symbol == "**":
        _check_power(left, right)
    return check_size(BINARY_OPERATORS[symbol](left, right))


def _check_repetition(sequence: Any, count: Any) -> None:
    if isinstance(sequence, (str, list, tuple)) and isinstance(count, int) and len(sequence) * count > MAX_ITEMS:
        raise ChatTemplateError(f"it repeats a value {count:,} times, past the limit of {MAX_ITEMS:,} items")


def _check_power(base: Any, exponent: Any) -> None:
    if isinstance(base, int) and isinstance(exponent, int) and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
        raise ChatTemplateError(f"it raises {base} to the power {exponent:,}, past the limit of {MAX_INT_BITS:,} bits")
