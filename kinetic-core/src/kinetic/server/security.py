"""What every request passes first: the connection limit, the Host and browser-origin checks, the API key,
JSON bodies."""

from __future__ import annotations

import hmac
import ipaddress
import threading
from typing import TYPE_CHECKING, Callable, Collection, Iterator, Optional
from urllib.parse import urlsplit

import falcon
from falcon.util.uri import parse_host

from kinetic.server.errors import ApiError

if TYPE_CHECKING:
    from kinetic.server.cors import Cors

MAX_OPEN = 64  # requests served at once; more get a 503
OPEN_ROUTES = frozenset({"/health", "/v1/health"})  # answered without the API key


def is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """A Host header, --host or --allowed-hosts entry in one spelling: lower case, without port, brackets or a
    final dot, an IP address in its standard form."""
    name = value.strip().lower()
    try:
        name = parse_host(name)[0]
    except ValueError:  # a port that is not a number: kept whole, so it matches no allowed name
        pass
    name = name.rstrip(".")
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def host_list(names: str) -> tuple[str, ...]:
    """--allowed-hosts a,b (or KINETIC_ALLOWED_HOSTS) as its names."""
    return tuple(name.strip() for name in names.split(",") if name.strip())


def local_origin(origin: str, server_host: str) -> bool:
    """Whether a browser's Origin is this computer: a loopback address or the host the server was reached at."""
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    return bool(host) and (is_loopback(host) or host == server_host.lower())


class Guard:
    """Falcon middleware; json_routes are the routes that take only application/json bodies; allowed_hosts the
    Host names answered, besides loopback ones, when there is no API key; cors the web pages of other sites let
    through (--cors-origins)."""

    def __init__(self, api_key: Optional[str], json_routes: frozenset[str], max_open: int = MAX_OPEN,
                 allowed_hosts: Collection[str] = (), cors: Optional[Cors] = None):
        self.api_key = api_key
        self.cors = cors
        self.json_routes = json_routes
        self.max_open = max_open
        self.allowed_hosts = frozenset(host_name(host) for host in allowed_hosts)
        self.open = 0
        self._lock = threading.Lock()

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        with self._lock:
            if self.open >= self.max_open:
                raise ApiError(503, f"the server is busy: {self.max_open} requests are already open; try again")
            self.open += 1
        req.context.counted = True
        if self.api_key is None:
            self._check_host(req.get_header("Host"))
        origin = req.get_header("Origin")
        listed = origin is not None and self.cors is not None and self.cors.allows(origin, req.host)
        if origin is not None and not (listed or local_origin(origin, req.host)):
            raise ApiError(403, "requests from web pages of other sites are refused: the model is this "
                                "computer's; call the server from an app, a script or a backend, or let the "
                                "site in with --cors-origins ORIGIN")
        preflight = listed and req.method == "OPTIONS"  # a browser sends no API key before its request
        if self.api_key is not None and req.path not in OPEN_ROUTES and not preflight and not self._authorized(req):
            raise ApiError(401, "invalid or missing API key: send Authorization: Bearer KEY or X-Api-Key: KEY")
        if req.method == "POST" and req.path in self.json_routes and not _is_json(req.content_type):
            raise ApiError(415, f"the body must be sent as application/json, not {req.content_type or 'without a type'}")

    def _check_host(self, header: Optional[str]) -> None:
        """Refuse a Host that is not this server's. Without this, a web page whose name was rebound to this
        computer (DNS rebinding) could drive the model: to the browser, the page and the server are one site.
        A request without a Host came from no browser."""
        if header is None:
            return
        name = host_name(header)
        if not (is_loopback(name) or name in self.allowed_hosts):
            raise ApiError(403, f"requests addressed to {name} are refused: use localhost or 127.0.0.1, or start "
                                "the server with --allowed-hosts NAME (or --api-key) to accept that name")

    def _authorized(self, req: falcon.Request) -> bool:
        bearer = req.get_header("Authorization") or ""
        scheme, _, token = bearer.partition(" ")
        given = token.strip() if scheme.lower() == "bearer" else (req.get_header("X-Api-Key") or "")
        return hmac.compare_digest(given.encode(), self.api_key.encode())

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource, req_succeeded: bool) -> None:
        """A request stays open until its response is sent: for a stream, until the stream ends or is closed."""
        if not getattr(req.context, "counted", False):
            return
        if resp.stream is not None and not hasattr(resp.stream, "read"):
            resp.stream = self._closing(resp.stream)
        else:
            self._close()

    def _closing(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        return ClosingStream(chunks, self._close)

    def _close(self) -> None:
        with self._lock:
            self.open -= 1


class ClosingStream:
    """A response stream that calls on_close once, when the server closes it, even if it was never started
    (a generator's finally would not run then)."""

    def __init__(self, chunks: Iterator[bytes], on_close: Callable[[], None]):
        self._chunks = chunks
        self._on_close: Optional[Callable[[], None]] = on_close

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        return next(self._chunks)

    def close(self) -> None:
        try:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()


def _is_json(content_type: Optional[str]) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "application/json"
