"""The WSGI entry point, configured from the environment, for waitress-serve, gunicorn or any WSGI server:

    KINETIC_MODEL=model.gguf waitress-serve --port 8080 kinetic.server.wsgi:app

KINETIC_MODEL (required) names the .gguf file; KINETIC_ALIAS, KINETIC_API_KEY, KINETIC_ALLOWED_HOSTS,
KINETIC_CTX_SIZE, KINETIC_THREADS, KINETIC_DEVICE, KINETIC_CHAT_TEMPLATE_FILE and KINETIC_OFF are serve's
--alias, --api-key, --allowed-hosts, -c, -t, --device, --chat-template-file and --off. The model loads when
this module is imported. The WSGI server's address is not known here: without an API key, a name other than a
loopback one that clients use to reach it goes in KINETIC_ALLOWED_HOSTS.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import falcon

from kinetic.engine.options import SessionOptions
from kinetic.errors import KineticError
from kinetic.server.app import make_app
from kinetic.server.security import host_list
from kinetic.server.serving import load_served_model


def app_from_environment(env: Mapping[str, str]) -> falcon.App:
    model = env.get("KINETIC_MODEL", "").strip()
    if not model:
        raise KineticError("set KINETIC_MODEL to the .gguf file to serve, e.g. "
                           "KINETIC_MODEL=model.gguf waitress-serve kinetic.server.wsgi:app")
    served = load_served_model(Path(model), SessionOptions.from_env(env), alias=env.get("KINETIC_ALIAS") or None)
    return make_app(served, api_key=env.get("KINETIC_API_KEY") or None,
                    allowed_hosts=host_list(env.get("KINETIC_ALLOWED_HOSTS", "")))


app = app_from_environment(os.environ)
