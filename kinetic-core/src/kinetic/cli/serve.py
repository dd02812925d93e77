"""`kinetic serve`: the OpenAI-, llama-server- and Ollama-compatible API on 127.0.0.1:8080 (Ollama's port
with --ollama), under waitress."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional

from kinetic.cli.options import session_options
from kinetic.server.app import make_app
from kinetic.server.ollama import OLLAMA_PORT
from kinetic.server.security import host_list
from kinetic.server.serving import load_served_model, serve

DEFAULT_PORT = 8080  # llama-server's


def listen_port(port: Optional[int], ollama: bool) -> int:
    """--port when given, else Ollama's port with --ollama, else llama-server's."""
    if port is not None:
        return port
    return OLLAMA_PORT if ollama else DEFAULT_PORT


def serve_command(model: Path, host: str, port: int, alias: Optional[str], api_key: Optional[str],
                  options: Mapping[str, Any], allowed_hosts: str, parallel: Optional[int], slots: bool) -> None:
    served = load_served_model(model, session_options(options), alias=alias, parallel=parallel)
    app = make_app(served, api_key=api_key, allowed_hosts=(host, *host_list(allowed_hosts)), slots_route=slots)
    serve(app, served, host, port)
