"""Errors in the OpenAI shape: {"error": {"message", "type", "param", "code"}} with a matching status; under
/api/ (Ollama's routes) in Ollama's: {"error": "message"}; on the Anthropic routes in Anthropic's:
{"type": "error", "error": {"type", "message"}}."""

from __future__ import annotations

import logging
from typing import Any, Optional

import falcon

from kinetic.errors import KineticError, PromptError, PromptTooLong

log = logging.getLogger("kinetic.server")

# HTTP status -> the OpenAI error type clients switch on
TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 405: "invalid_request_error", 413: "invalid_request_error",
         415: "invalid_request_error", 501: "not_supported_error", 503: "server_busy_error"}


class ApiError(Exception):
    """A request the server refuses; the message is one line for the client."""

    def __init__(self, status: int, message: str, param: Optional[str] = None, code: Optional[str] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code


def bad_request(message: str, param: Optional[str] = None) -> ApiError:
    return ApiError(400, message, param)


def error_body(status: int, message: str, param: Optional[str] = None, code: Optional[str] = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": TYPES.get(status, "server_error"), "param": param, "code": code}}


def ollama_error(status: int, message: str, param: Optional[str] = None, code: Optional[str] = None) -> dict[str, Any]:
    """Ollama's error body, which names only the message."""
    return {"error": message}


def anthropic_error_body(status: int, message: str, param: Optional[str] = None,
                         code: Optional[str] = None) -> dict[str, Any]:
    """Anthropic's shape, which names no field apart from the message."""
    return {"type": "error", "error": {"type": ANTHROPIC_TYPES.get(status, "api_error"), "message": message}}


# Anthropic's error types by HTTP status (docs.anthropic.com, "Errors")
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                   404: "not_found_error", 405: "invalid_request_error", 413: "request_too_large",
                   415: "invalid_request_error", 429: "rate_limit_error", 503: "overloaded_error"}
# Routes, by the start of their path, whose errors take another API's shape than OpenAI's
SHAPES = {"/v1/messages": anthropic_error_body, "/api/": ollama_error}


def shaped_error(path: str, status: int, message: str, param: Optional[str] = None,
                 code: Optional[str] = None) -> dict[str, Any]:
    """The error body in the shape of the API path belongs to."""
    shape = next((shape for start, shape in SHAPES.items() if path.startswith(start)), error_body)
    return shape(status, message, param, code)


def _answer(req: falcon.Request, resp: falcon.Response, status: int, message: str, param: Optional[str] = None,
            code: Optional[str] = None) -> None:
    resp.status = status
    resp.media = shaped_error(req.path, status, message, param, code)
    resp.content_type = falcon.MEDIA_JSON


def handle_api_error(req, resp, error: ApiError, params) -> None:
    _answer(req, resp, error.status, error.message, error.param, error.code)


def handle_http_error(req, resp, error: falcon.HTTPError, params) -> None:
    """Falcon's own refusals (404, 405, a bad header) in the OpenAI shape."""
    status = error.status_code
    message = {404: f"no such endpoint: {req.method} {req.path}",
               405: f"{req.method} is not allowed on {req.path}"}.get(status) or error.description or error.title
    _answer(req, resp, status, str(message))
    if error.headers:
        resp.set_headers(error.headers)


def handle_kinetic_error(req, resp, error: KineticError, params) -> None:
    """An engine refusal (a chat template that fails on these messages, a banned vocabulary): the request's fault."""
    _answer(req, resp, 400, str(error))


def handle_prompt_error(req, resp, error: PromptError, params) -> None:
    """The engine's refusal of a prompt, in the server's words: the context is the one the server started with."""
    if isinstance(error, PromptTooLong):
        refusal = ApiError(400, f"{error.facts}; start the server with a larger -c or send a shorter prompt")
    else:
        refusal = ApiError(400, str(error), "prompt")
    handle_api_error(req, resp, refusal, params)


def handle_unexpected(req, resp, error: Exception, params) -> None:
    """A bug: logged with its traceback, answered with a 500, and the server goes on."""
    log.exception("unexpected error on %s %s", req.method, req.path)
    _answer(req, resp, 500, f"internal error: {type(error).__name__}: {error}")


def add_handlers(app: falcon.App) -> None:
    """Falcon looks handlers up by the most specific class, so the order here does not matter."""
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(KineticError, handle_kinetic_error)
    app.add_error_handler(PromptError, handle_prompt_error)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(ApiError, handle_api_error)
