"""Ollama's routes about models: GET /api/version, /api/tags and /api/ps, POST /api/show, and the
heartbeat at /; each lists or shows the one model this server serves."""

from __future__ import annotations

import time

from kinetic.server.fields import Fields, read_json
from kinetic.server.ollama.described import listed, modified_at, rfc3339, shown
from kinetic.server.ollama.requests import listed_name, requested_model
from kinetic.server.served import ServedModel

OLLAMA_VERSION = "0.13.0"  # the Ollama release whose API this server answers
FOREVER_NS = 2**63 - 1  # Ollama's keep_alive of -1 ends this far ahead: its `ollama ps` shows "Forever"


class Heartbeat:
    """GET / (and HEAD): how Ollama's clients see that the server runs."""

    def on_get(self, req, resp):
        resp.content_type = "text/plain; charset=utf-8"
        resp.text = "Ollama is running"

    on_head = on_get


class Version:
    def on_get(self, req, resp):
        resp.media = {"version": OLLAMA_VERSION}

    on_head = on_get


class Tags:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        name = listed_name(self.served.name)
        resp.media = {"models": [{**listed(self.served, name), "modified_at": modified_at(self.served)}]}

    on_head = on_get


class Ps:
    """The served model is always loaded, and stays so: expires_at lies as far ahead as Ollama's forever."""

    def __init__(self, served: ServedModel):
        self.served = served

    def on_get(self, req, resp):
        served = self.served
        on_gpu = served.session.device.name != "cpu"
        entry = listed(served, listed_name(served.name))
        resp.media = {"models": [{**entry, "expires_at": rfc3339(time.time_ns() + FOREVER_NS),
                                  "size_vram": entry["size"] if on_gpu else 0,
                                  "context_length": served.context_length}]}


class Show:
    def __init__(self, served: ServedModel):
        self.served = served

    def on_post(self, req, resp):
        fields = Fields(read_json(req))
        requested_model(self.served, fields, "model", "name")
        resp.media = shown(self.served, fields.boolean("verbose"))
