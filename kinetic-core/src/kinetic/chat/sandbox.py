"""The Jinja environment chat templates run in: Hugging Face's (transformers' chat_template_utils), bounded.

Templates are untrusted code from a model file. ImmutableSandboxedEnvironment keeps them from Python's
internals and from changing their inputs (lists they make themselves take append and pop, as in llama.cpp's
Jinja); kinetic.chat.limits keeps them from running or growing forever.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
from datetime import datetime
from typing import Any, Callable, Iterator

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace
from jinja2.visitor import NodeTransformer

from kinetic.chat import limits

LIST_CHANGES = ("append", "pop")
_INPUT_LISTS: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar("input_lists", default=frozenset())

# Names a template cannot write (they hold a space), given to the filters the compiler inserts.
PACED = "kinetic paced"
SIZED = "kinetic sized"


def raise_exception(message: Any) -> None:
    raise jinja2.TemplateError(message)


def strftime_now(format: str) -> str:
    return datetime.now().strftime(format)


def tojson(value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
           sort_keys: bool = False) -> str:
    """transformers' tojson: plain json.dumps, without Jinja's HTML escaping."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


class TemplateDict:
    """`dict` as templates see it: builds dicts, without exposing the type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class TemplateNamespace(Namespace):
    """A namespace that refuses underscore names, which could reach Python's internals."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # Namespace's signature, so namespace(self=...) works
        self, args = args[0], args[1:]
        attributes = dict(*args, **kwargs)
        for name in attributes:
            TemplateNamespace.check_name(name)
        Namespace.__init__(self, attributes)

    def __setitem__(self, name: str, value: Any) -> None:
        TemplateNamespace.check_name(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.sandbox.SecurityError(f"a namespace cannot hold the underscore name {name!r}")


class GenerationBlocks(Extension):
    """transformers' {% generation %}...{% endgeneration %}, which marks the assistant's part; it renders its body."""

    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.CallBlock:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("render_body"), [], [], body).set_lineno(lineno)

    def render_body(self, caller: Callable[[], str]) -> str:
        return caller()


def sized(function: Callable[..., Any]) -> Callable[..., Any]:
    """function, with its result checked against the size cap; Jinja's pass_context marks are kept."""

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        return limits.check_size(function(*args, **kwargs))

    return checked


class ChatSandbox(ImmutableSandboxedEnvironment):
    """Hugging Face's chat-template environment, with every loop, call, operator and output bounded."""

    intercepted_binops = frozenset(limits.BINARY_OPERATORS)
    concat = staticmethod(limits.joined)

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlocks, loopcontrols])
        self.filters["tojson"] = tojson
        self.filters["safe"] = str  # no Markup: with autoescape off, llama.cpp's Jinja escapes nothing added to it
        self.filters = {name: sized(function) for name, function in self.filters.items()}
        self.filters[PACED] = limits.paced
        self.filters[SIZED] = limits.check_size
        del self.globals["lipsum"]  # it loops in Python for as long as its argument asks
        self.globals.update(raise_exception=raise_exception, strftime_now=strftime_now,
                            dict=TemplateDict(), namespace=TemplateNamespace)

    # Jinja's own signature: the mangled names cannot clash with a template's keyword arguments.
    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        limits.check_time()
        return limits.check_size(super().call(__context, __obj, *args, **kwargs))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        return limits.binary_operation(operator, left, right)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """append and pop on a list the template made itself, as llama.cpp's Jinja allows them (Kimi K2's
        templates queue call ids so); its inputs' lists stay immutable."""
        if isinstance(obj, list) and attr in LIST_CHANGES and id(obj) not in _INPUT_LISTS.get():
            return True
        return super().is_safe_attribute(obj, attr, value)


class InsertLimits(NodeTransformer):
    """Routes each for-loop through PACED and each `~` concatenation through SIZED."""

    def visit_For(self, node: nodes.For) -> nodes.For:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, PACED, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Filter:
        self.generic_visit(node)
        return nodes.Filter(node, SIZED, [], [], None, None, lineno=node.lineno)


_ENVIRONMENT = ChatSandbox()


@contextlib.contextmanager
def inputs_frozen(variables: Any) -> Iterator[None]:
    """While rendering with variables, their lists (at any depth) cannot be changed."""
    token = _INPUT_LISTS.set(frozenset(id(found) for found in lists_in(variables)))
    try:
        yield
    finally:
        _INPUT_LISTS.reset(token)


def lists_in(value: Any) -> Iterator[list]:
    """Every list in value; list.__iter__ itself, so that a list watching its readers is not read."""
    if isinstance(value, list):
        yield value
        items: Any = list.__iter__(value)
    else:
        items = value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else ()
    for item in items:
        yield from lists_in(item)


def compile_template(source: str) -> jinja2.Template:
    """source compiled in the bounded sandbox; raises jinja2.TemplateSyntaxError for a malformed one."""
    tree = InsertLimits().visit(_ENVIRONMENT.parse(source))
    tree.set_environment(_ENVIRONMENT)
    return _ENVIRONMENT.from_string(tree)
