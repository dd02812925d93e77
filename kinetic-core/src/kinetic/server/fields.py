"""Typed reads of a JSON request body: each wrong type or out-of-range value is a 400 naming the field."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping, Optional

import falcon

from kinetic.server.errors import ApiError, bad_request

MAX_BODY = 16 * 1024 * 1024  # bytes; a full 32k-token conversation is far smaller


def read_json(req: falcon.Request) -> dict[str, Any]:
    """The body as a JSON object, or a 400 (malformed, not an object) or 413 (too large)."""
    length = req.content_length
    if length is not None and length > MAX_BODY:
        raise ApiError(413, f"the body is {length} bytes, more than the limit of {MAX_BODY}")
    raw = req.bounded_stream.read(MAX_BODY + 1)
    if len(raw) > MAX_BODY:
        raise ApiError(413, f"the body is more than the limit of {MAX_BODY} bytes")
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as error:
        raise bad_request(f"the body is not valid JSON: {error}") from None
    except RecursionError:
        raise bad_request("the body is not valid JSON: nested too deeply") from None
    if not isinstance(body, dict):
        raise bad_request(f"the body must be a JSON object, not {json_type(body)}")
    return body


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


class Fields:
    """One body's fields; a missing or null field reads as its default."""

    def __init__(self, body: Mapping[str, Any]):
        self.body = body

    def has(self, name: str) -> bool:
        return self.body.get(name) is not None

    def number(self, name: str, default: Optional[float] = None, low: float = -math.inf,
               high: float = math.inf) -> Optional[float]:
        value = self.body.get(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise bad_request(f"{name} must be a number, not {json_type(value)}", name)
        if not low <= value <= high:
            raise bad_request(f"{name} must be between {low:g} and {high:g}, not {value:g}", name)
        return float(value)

    def integer(self, name: str, default: Optional[int] = None, low: float = -math.inf,
                high: float = math.inf) -> Optional[int]:
        value = self.body.get(name)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad_request(f"{name} must be an integer, not {json_type(value)}", name)
        if not low <= value <= high:
            raise bad_request(f"{name} must be between {low:g} and {high:g}, not {value}", name)
        return value

    def boolean(self, name: str, default: bool = False) -> bool:
        value = self.body.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise bad_request(f"{name} must be true or false, not {json_type(value)}", name)
        return value

    def string(self, name: str, default: Optional[str] = None) -> Optional[str]:
        value = self.body.get(name)
        if value is None:
            return default
        if not isinstance(value, str):
            raise bad_request(f"{name} must be a string, not {json_type(value)}", name)
        return value

    def mapping(self, name: str) -> dict[str, Any]:
        value = self.body.get(name)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise bad_request(f"{name} must be an object, not {json_type(value)}", name)
        return value

    def strings(self, name: str, most: int = 16) -> tuple[str, ...]:
        """A string or a list of strings (stop, dry_sequence_breakers)."""
        value = self.body.get(name)
        if value is None:
            return ()
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise bad_request(f"{name} must be a string or a list of strings", name)
        if len(items) > most:
            raise bad_request(f"{name} takes at most {most} strings, not {len(items)}", name)
        return tuple(items)
