"""`kinetic serve`: the OpenAI-, llama-server- and Ollama-compatible API on 127.0.0.1:8080 (Ollama's port
with --ollama), under waitress."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from kinetic.cli.options import sampling_overrides, session_options
from kinetic.cli.usage import UsageError
from kinetic.receipt import read_key
from kinetic.server.app import make_app
from kinetic.server.cors import Cors, origin_list
from kinetic.server.defaults import ServerDefaults
from kinetic.server.ollama import OLLAMA_PORT
from kinetic.server.security import host_list
from kinetic.server.serving import load_served_model, serve

DEFAULT_PORT = 8080  # llama-server's


def listen_port(port: Optional[int], ollama: bool) -> int:
    """--port when given, else Ollama's port with --ollama, else llama-server's."""
    if port is not None:
        return port
    return OLLAMA_PORT if ollama else DEFAULT_PORT


@dataclass(frozen=True)
class Listening:
    """serve's flags for the listening side: the address, who is let in, which routes."""

    host: str
    port: int
    api_key: Optional[str]
    allowed_hosts: str  # --allowed-hosts, comma-separated
    slots: bool
    cors_origins: str  # --cors-origins, comma-separated
    cors_credentials: bool


def serve_command(model: Path, alias: Optional[str], parallel: Optional[int], listening: Listening,
                  options: Mapping[str, Any]) -> None:
    cors = cors_of(listening)
    key = read_key(options["sign_key"]) if options["sign_key"] is not None else None  # said before the model loads
    defaults = ServerDefaults(sampling_overrides(options), options["n_predict"], key)
    served = load_served_model(model, session_options(options), alias=alias, parallel=parallel, defaults=defaults)
    allowed_hosts = (listening.host, *host_list(listening.allowed_hosts))
    app = make_app(served, api_key=listening.api_key, allowed_hosts=allowed_hosts, slots_route=listening.slots,
                   cors=cors)
    serve(app, served, listening.host, listening.port)


def cors_of(listening: Listening) -> Cors:
    """--cors-origins as the Cors middleware; `*` is refused: the allow-list names the sites it lets in."""
    origins = origin_list(listening.cors_origins)
    if "*" in origins:
        raise UsageError("--cors-origins '*' would let every web page use the model; list the sites, "
                         "e.g. --cors-origins https://app.example.com")
    return Cors(origins, listening.cors_credentials)
