"""Progress on long work (kinetic.progress): a line or a bar on a terminal's standard error, wiped when the work
ends, and nothing at all where standard error is not a terminal."""

from __future__ import annotations

import io
import time

import pytest

from kinetic import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def progress_off_after():
    yield
    progress.show_on_terminal(False)


def terminal(monkeypatch) -> Terminal:
    """Standard error as a terminal, for the rest of the test (pytest sets its own at each phase's start)."""
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)
    monkeypatch.setattr(progress, "REDRAW", 0.01)
    progress.show_on_terminal()
    return screen


def test_nothing_is_drawn_where_stderr_is_not_a_terminal(monkeypatch):
    piped = io.StringIO()
    monkeypatch.setattr("sys.stderr", piped)
    progress.show_on_terminal()
    assert not progress.shown()
    with progress.showing("loading"):
        time.sleep(0.05)
    assert list(progress.bar(range(3), unit="chunk")) == [0, 1, 2]
    assert piped.getvalue() == ""


def test_a_line_names_the_work_and_is_wiped_when_it_ends(monkeypatch):
    screen = terminal(monkeypatch)
    with progress.showing("loading model.gguf"):
        time.sleep(0.05)
    drawn = screen.getvalue()
    assert "\r| loading model.gguf: 0 s\033[K" in drawn
    assert drawn.endswith("\r\033[K")


def test_work_quicker_than_show_after_draws_nothing(monkeypatch):
    screen = terminal(monkeypatch)
    monkeypatch.setattr(progress, "SHOW_AFTER", 10.0)
    with progress.showing("loading"):
        pass
    assert screen.getvalue() == ""


def test_turning_progress_off_wipes_the_line_before_returning(monkeypatch):
    screen = terminal(monkeypatch)
    """What is written next (an answer's first words) starts on a clean line that nothing draws over."""
    activity = progress.Activity("compiling", linger=60.0)
    activity.begin()
    time.sleep(0.05)
    activity.end()
    progress.show_on_terminal(False)
    assert screen.getvalue().endswith("\r\033[K")
    written = len(screen.getvalue())
    time.sleep(0.05)
    assert len(screen.getvalue()) == written


def test_a_said_line_goes_above_the_activity(monkeypatch):
    screen = terminal(monkeypatch)
    with progress.showing("loading"):
        time.sleep(0.05)
        progress.say("context 4k to fit the GPU; -c to change")
        time.sleep(0.05)
    drawn = screen.getvalue()
    said = drawn.index("\r\033[Kcontext 4k to fit the GPU; -c to change\n")
    assert "loading" in drawn[said + 1:]


def test_the_compile_clock_counts_a_compilation_inside_another_once(monkeypatch):
    screen = terminal(monkeypatch)
    clock = progress.CompileClock("compiling CPU kernels, once, about a minute")
    with clock.during():
        with clock.during():
            time.sleep(0.03)
        time.sleep(0.03)
    assert 0.06 <= clock.seconds < 0.5
    progress.show_on_terminal(False)
    assert "compiling CPU kernels, once, about a minute: 0 s" in screen.getvalue()


def test_the_cli_draws_nothing_when_stderr_is_piped(capsys, qwen_gguf):
    from kinetic.cli.main import main

    assert main(["run", str(qwen_gguf), "--temp", "0", "-n", "4", "-c", "256", "Hi"]) == 0
    assert "\r" not in capsys.readouterr().err
