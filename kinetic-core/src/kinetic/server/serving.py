"""Loading the served model and running the app under waitress, as `kinetic serve` and wsgi.py do."""

from __future__ import annotations

import errno
import signal
import sys
from pathlib import Path
from typing import Callable, Optional

import falcon

from kinetic import progress
from kinetic.engine.embedding import pooling_of
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.errors import KineticError
from kinetic.server.fields import MAX_BODY
from kinetic.server.defaults import ServerDefaults
from kinetic.server.parallel import slots_for
from kinetic.server.security import MAX_OPEN, is_loopback
from kinetic.server.served import ServedModel

# waitress settings: a client has 30 s to send its request (checked every 5 s); enough threads that the
# 65th open request reaches the app and gets its 503; a disconnect is seen while a request runs.
WAITRESS = {
    "threads": MAX_OPEN + 8,
    "connection_limit": MAX_OPEN + 36,
    "channel_timeout": 30,
    "cleanup_interval": 5,
    "channel_request_lookahead": 1,
    "max_request_body_size": MAX_BODY,
    "max_request_header_size": 64 * 1024,
    "expose_tracebacks": False,
    "ident": "kinetic",
}


def load_served_model(model: Path, options: SessionOptions, alias: Optional[str] = None,
                      parallel: Optional[int] = None, defaults: ServerDefaults = ServerDefaults()) -> ServedModel:
    """parallel: --parallel (None: the default for the device, parallel.slots_for); defaults: serve's sampling
    flags and -n."""
    session = Session(Path(model), options)
    slots = slots_for(session, parallel)
    if parallel is not None and parallel > slots:
        pooling = pooling_of(session)
        why = "a reranking model scores one document at a time" if pooling == "rank" else \
            "an embedding model embeds one text at a time" if pooling is not None else \
            "with Convoy off, requests take turns on one slot"
        print(f"kinetic: warning: --parallel {parallel}: {why}", file=sys.stderr, flush=True)
    served = ServedModel(session, alias, slots, defaults)
    served.warm_up()
    progress.show_on_terminal(False)  # from here on the terminal is the server's log
    return served


def speed_line(session: Session) -> str:
    """Speed technologies on: RAD-1; off: none"""
    on = ", ".join(t.title for t in session.speed_on) or "none"
    return f"Speed technologies on: {on}; off: " + (", ".join(t.title for t in session.speed_off) or "none")


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def listening(app: falcon.App, host: str, port: int):
    """waitress's server bound to host:port; an address it cannot bind is one line, not a traceback."""
    import waitress

    try:
        return waitress.create_server(app, host=host, port=port, **WAITRESS)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise KineticError(f"port {port} is in use on {host}; pick another with --port "
                               "(--port 0 picks a free one)") from None
        raise KineticError(f"cannot listen on {host} port {port}: {error.strerror or error}") from None


def stop_on_ctrl_c() -> None:
    """Ctrl+C (SIGINT) stops the server, as it stops llama-server, also when it started with SIGINT ignored, as
    a job a script starts in the background (`kinetic serve ... &`) does: Python then leaves SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def serve(app: falcon.App, served: ServedModel, host: str, port: int,
          announce: Callable[[str], None] = lambda line: print(line, flush=True)) -> None:
    """Listen, print the start-up line, and serve until Ctrl+C (waitress stops its threads then)."""
    stop_on_ctrl_c()
    if not is_loopback(host):
        print(f"kinetic: warning: listening on {host} lets anyone who can reach it use the model; "
              "pair it with --api-key", file=sys.stderr, flush=True)
    server = listening(app, host, port)
    try:
        announce(f"Serving {served.name} on {served.session.runner.device_name} at "
                 f"{base_url(host, server.effective_port)}")
        announce(speed_line(served.session))
        server.run()
    finally:
        server.close()
