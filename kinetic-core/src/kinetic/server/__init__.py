"""The OpenAI- and llama-server-compatible HTTP server: a falcon WSGI app, served by waitress.

    app = make_app(ServedModel(Session(path)), api_key=None)   # any WSGI server can run it
    kinetic serve MODEL                                    # waitress, as the reference docs describe
    KINETIC_MODEL=model.gguf waitress-serve kinetic.server.wsgi:app
"""

from kinetic.server.app import make_app
from kinetic.server.served import ServedModel

__all__ = ["ServedModel", "make_app"]
