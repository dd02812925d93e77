"""The documentation site (mkdocs.yml, docs/): it builds with --strict, its generated parts are up to date, and
every command-line option, server route, hook and speed technology is on its page, as datasette's tests keep
its docs whole."""

from __future__ import annotations

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from cogapp import Cog

from kinetic import hookspecs
from kinetic.cli.main import app as cli_app
from kinetic.engine.options import SessionOptions
from kinetic.engine.session import Session
from kinetic.plugins import plugins
from kinetic.server import ServedModel, make_app

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def page(name: str) -> str:
    return (DOCS / name).read_text()


def test_the_site_builds_strictly(tmp_path):
    """mkdocs build --strict fails on a broken link, a page missing from the nav, or a nav entry with no page."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "cli" / "index.html").is_file()


@pytest.mark.parametrize("name", sorted(p.name for p in DOCS.glob("*.md") if "[[[cog" in p.read_text()))
def test_generated_parts_are_up_to_date(name):
    """cli.md holds each command's --help and from-llama-cpp.md the flag table, written by cog (make docs)."""
    assert Cog().main(["cog", "--check", str(DOCS / name)]) == 0, f"run make docs: docs/{name} is out of date"


def test_every_command_and_option_is_documented():
    documented = page("cli.md")
    group = typer.main.get_command(cli_app)
    for name, command in group.commands.items():
        assert f"### kinetic {name}\n" in documented
        for param in command.get_params(typer.Context(command)):
            for spelling in param.opts + param.secondary_opts if param.param_type_name == "option" else ():
                assert re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", documented), (name, spelling)


def routes_of(app) -> list[str]:
    def walk(nodes):
        for node in nodes:
            if node.resource is not None:
                yield node.uri_template
            yield from walk(node.children)

    return list(walk(app._router._roots))


def test_every_server_route_is_documented(qwen_gguf):
    served = ServedModel(Session(qwen_gguf, SessionOptions(device="cpu", ctx_size=256)), name="coder")
    documented = page("server.md")
    routes = routes_of(make_app(served))
    assert "/v1/chat/completions" in routes and "/v1/embeddings" in routes  # a text model answers both
    assert [route for route in routes if f"`{route}`" not in documented] == []


def test_every_hook_is_documented():
    documented = page("plugins.md")
    hooks = [name for name, hook in inspect.getmembers(hookspecs, inspect.isfunction) if name.startswith("register_")]
    assert len(hooks) == 5
    assert [hook for hook in hooks if hook not in documented] == []


def test_every_speed_technology_is_documented():
    documented = page("speed.md")
    technologies = plugins().speed_technologies
    assert technologies
    assert [t.name for t in technologies if f"`{t.name}`" not in documented or t.title not in documented] == []
    run = typer.main.get_command(cli_app).commands["run"]
    off = next(p for p in run.get_params(typer.Context(run)) if "--off" in p.opts)
    assert [t.name for t in technologies if t.name not in off.help] == []  # its help, on cli.md
