"""--cors-origins: the browser origins let through, llama-server's allow-list made explicit. The Guard refuses
a request from any other web page (security.py); a listed origin gets through, and its responses carry the
CORS headers a browser needs to read them, preflights included. `localhost` stands for every origin on this
computer, as in llama-server."""

from __future__ import annotations

from typing import Collection

import falcon

from kinetic.server.security import local_origin

LOCAL = "localhost"
METHODS = "GET, POST, DELETE, OPTIONS"  # llama-server's default --cors-methods


def origin_key(origin: str) -> str:
    """An origin as browsers send it, in one spelling: lower case, without a final slash."""
    return origin.strip().rstrip("/").lower()


def origin_list(origins: str) -> tuple[str, ...]:
    """--cors-origins a,b as its origins."""
    return tuple(origin.strip() for origin in origins.split(",") if origin.strip())


class Cors:
    """Falcon middleware, after the Guard: the CORS headers on the responses to the allowed origins."""

    def __init__(self, origins: Collection[str] = (), credentials: bool = True):
        self.origins = frozenset(origin_key(origin) for origin in origins if origin != LOCAL)
        self.local = LOCAL in origins
        self.credentials = credentials

    def allows(self, origin: str, server_host: str) -> bool:
        """Whether --cors-origins lets a page of origin use the server reached at server_host."""
        return origin_key(origin) in self.origins or (self.local and local_origin(origin, server_host))

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource, req_succeeded: bool) -> None:
        origin = req.get_header("Origin")
        if origin is None or not self.allows(origin, req.host):
            return
        resp.set_header("Access-Control-Allow-Origin", origin)
        resp.append_header("Vary", "Origin")
        if self.credentials:
            resp.set_header("Access-Control-Allow-Credentials", "true")
        if is_preflight(req):
            resp.set_header("Access-Control-Allow-Methods", METHODS)
            resp.set_header("Access-Control-Allow-Headers", req.get_header("Access-Control-Request-Headers") or "*")
            resp.set_header("Access-Control-Max-Age", "86400")


def is_preflight(req: falcon.Request) -> bool:
    """A browser asking, before its request, whether it may send it."""
    return req.method == "OPTIONS" and req.get_header("Access-Control-Request-Method") is not None
