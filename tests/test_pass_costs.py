"""Which drafts a shared pass runs (engine.pass_costs): by the costs measured per pass size and how often
each drafter's guesses were right. That leaving a draft out keeps every answer is test_convoy's."""

from __future__ import annotations

import pytest

from kinetic.contracts.device import Row
from kinetic.engine.generate import Pass
from kinetic.engine.pass_costs import EXPLORE, PassCosts, drafts_worth_running


def costs(seconds_by_rows: dict[int, float]) -> PassCosts:
    table = PassCosts()
    for rows, seconds in seconds_by_rows.items():
        table.record(rows, seconds)
    return table


def decode(guesses: int, kept: float) -> Pass:
    """A decode step of one sequence: its last token and `guesses` drafted rows, every row asking logits."""
    return Pass([Row(None, 1, 10 + i, parent=i - 1, logits=True) for i in range(1 + guesses)], guesses, kept)


def prompt_chunk(n_rows: int) -> Pass:
    """A chunk from the middle of a prompt: no row asks logits, so it gives no token."""
    return Pass([Row(None, 1, i, parent=i - 1) for i in range(n_rows)])


def test_running_mean_and_the_line_through_the_nearest_sizes():
    table = costs({1: 0.050, 9: 0.130})
    table.record(1, 0.060)
    assert table.of(1) == pytest.approx(0.052)
    assert table.of(5) == pytest.approx(0.052 + 4 * (0.130 - 0.052) / 8)
    assert table.of(13) == pytest.approx(0.052 + 12 * (0.130 - 0.052) / 8)  # past the largest: the same line
    assert table.of(0) == pytest.approx(0.052)  # below the smallest size: the smallest's
    assert costs({4: 0.1}).of(5) is None and costs({4: 0.1}).of(4) is None  # one size gives no line


FLAT = {1: 0.050, 4: 0.052, 8: 0.055, 16: 0.060}  # matrix units: rows nearly free
STEEP = {1: 0.050, 4: 0.087, 8: 0.130, 16: 0.220}  # vector units: each row adds arithmetic


@pytest.mark.parametrize("seconds, passes, runs", [
    (FLAT, [decode(3, 0.5)], [3]),  # 1.875 tokens for 52 ms beat 1 for 50
    (STEEP, [decode(3, 0.5)], [1]),  # 1.5 tokens for 62 ms beat 1.75 for 75 and 1.875 for 87
    (STEEP, [decode(3, 0.2), decode(0, 0), decode(0, 0), decode(0, 0)], [0, 0, 0, 0]),  # 4.2 for 98 < 4 for 87
    (STEEP, [decode(3, 0.9), decode(0, 0), decode(0, 0), decode(0, 0)], [3, 0, 0, 0]),  # 6.44 for 119 > 4 for 87
    (FLAT, [decode(3, 0.2), decode(3, 0.2)], [2, 2]),  # third guesses, 0.008 tokens each, cost more than that
    (STEEP, [decode(3, 0.1), decode(3, 0.9)], [0, 3]),  # the likeliest guesses are taken first
    (STEEP, [decode(15, 1.0)], [15]),  # guesses that are always right: all of them
    (STEEP, [prompt_chunk(7), decode(1, 0.05)], [0, 0]),  # 1.05 tokens for 141 ms < 1 for 130 ms
    ({}, [decode(3, 0.1), decode(2, 0.1)], [3, 2]),  # no costs known yet: every guess runs
    ({4: 0.087}, [decode(3, 0.1)], [3]),
    ({1: 0.050}, [decode(3, 0.1)], [3]),
], ids=["flat-alone", "steep-alone", "steep-weak-draft", "steep-strong-draft", "flat-two", "likeliest-first",
        "certain", "beside-a-prompt", "no-costs", "one-cost", "its-own-size"])
def test_guesses_run_where_they_raise_tokens_per_second(seconds, passes, runs):
    out = drafts_worth_running(passes, costs(seconds))
    assert [step.guesses for step in out] == runs
    for step, before in zip(out, passes):
        assert step.rows == before.rows[: len(before.rows) - before.guesses + step.guesses]


def test_guesses_left_out_pass_after_pass_run_once_to_renew_the_costs():
    """One slow pass of a size, or a drafter's run of misses, must not keep drafts out for good: the costs and
    the record of guesses kept change only in passes that run guesses."""
    table = costs(STEEP)
    runs = [drafts_worth_running([decode(3, 0.2)], table)[0].guesses for _ in range(2 * EXPLORE)]
    assert runs == ([0] * (EXPLORE - 1) + [3]) * 2
    assert drafts_worth_running([decode(3, 0.9)], table)[0].guesses == 3  # worth it: the count starts again
    assert [drafts_worth_running([decode(3, 0.2)], table)[0].guesses for _ in range(EXPLORE - 1)] == [0] * (EXPLORE - 1)
