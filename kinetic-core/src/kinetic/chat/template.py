"""A model's own Jinja chat template, rendered byte for byte as Hugging Face renders it.

Whatever goes wrong in a template (a syntax error, raise_exception, an undefined name, a sandbox
violation, a runaway loop) comes out as one ChatTemplateError line naming the template line.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import TracebackType
from typing import Any, Mapping, Sequence

import jinja2

from kinetic.chat import limits
from kinetic.chat.capabilities import Capabilities, probe_capabilities
from kinetic.chat.inputs import template_variables
from kinetic.chat.sandbox import compile_template, inputs_frozen
from kinetic.errors import ChatTemplateError, KineticError
from kinetic.tokenizer.vocab import token_text

DEFAULT_TIME_LIMIT = 2.0  # seconds; real templates render in milliseconds


class ChatTemplate:
    """A compiled chat template and the text of the model's bos and eos tokens it is given."""

    def __init__(self, source: str, bos_token: str = "", eos_token: str = "", *,
                 time_limit: float = DEFAULT_TIME_LIMIT) -> None:
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.time_limit = time_limit
        try:
            self._compiled = compile_template(source)
        except Exception as error:
            raise ChatTemplateError(describe_failure(error)) from None

    @functools.cached_property
    def capabilities(self) -> Capabilities:
        """What the template can take, probed on first use; chat prompts adapt their messages to it."""
        return probe_capabilities(self)

    def render(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None,
               add_generation_prompt: bool = True, **kwargs: Any) -> str:
        """The prompt for messages; kwargs (chat_template_kwargs such as enable_thinking) become variables."""
        special_tokens = {"bos_token": self.bos_token, "eos_token": self.eos_token}
        return self.render_variables(template_variables(messages, tools, add_generation_prompt, special_tokens, kwargs))

    def render_variables(self, variables: Mapping[str, Any]) -> str:
        """The template rendered with exactly these variables, plain JSON values (inputs.plain makes them)."""
        try:
            with limits.deadline(self.time_limit), inputs_frozen(variables):
                return self._compiled.render(variables)
        except Exception as error:  # templates are code from the model file: anything may come out
            raise ChatTemplateError(describe_failure(error)) from None


def load_chat_template(metadata: Mapping[str, Any], template_file: Path | None = None) -> ChatTemplate:
    """The model's chat template (tokenizer.chat_template), or template_file's (--chat-template-file)."""
    if template_file is not None:
        source = read_template_file(Path(template_file))
    else:
        source = metadata.get("tokenizer.chat_template")
        if not isinstance(source, str) or not source:
            raise ChatTemplateError("the model file has no chat template; pass one with --chat-template-file "
                                    "(a base model without one is meant for /v1/completions)")
    bos = token_text(metadata, "tokenizer.ggml.bos_token_id")
    eos = token_text(metadata, "tokenizer.ggml.eos_token_id")
    return ChatTemplate(source, bos, eos)


def read_template_file(path: Path) -> str:
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ChatTemplateError(f"{path}: the chat template file is not UTF-8 text") from None
    except OSError as error:
        raise ChatTemplateError(f"{path}: cannot read the chat template file: {error.strerror or error}") from None
    if not source:
        raise ChatTemplateError(f"{path}: the chat template file is empty")
    return source


def describe_failure(error: BaseException) -> str:
    """One line saying what went wrong in a template and on which of its lines."""
    if isinstance(error, jinja2.TemplateSyntaxError):
        return f"chat template has a syntax error on line {error.lineno}: {error.message}"
    if isinstance(error, RecursionError):
        reason = "it recurses too deeply"
    elif isinstance(error, MemoryError):
        reason = "it ran out of memory"
    elif isinstance(error, (jinja2.TemplateError, KineticError)):
        reason = str(error)
    else:
        reason = f"{type(error).__name__}: {error}"
    line = template_line(error.__traceback__)
    where = f" on line {line}" if line else ""
    return " ".join(f"chat template failed{where}: {reason}".split())


def template_line(traceback: TracebackType | None) -> int | None:
    """The template line of the innermost template frame; Jinja rewrites tracebacks to show them."""
    line = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == "<template>":
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line
