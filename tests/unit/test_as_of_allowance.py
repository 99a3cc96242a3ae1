"""A token's allowance of past moments built per hour (workers/as_of.py BuildAllowance; issue #28, item 8:
every distinct `as_of` is a replay of the log, and nothing bounded how many one token asked for). The
clock is the test's: no waiting, no timing."""

from __future__ import annotations

from strata_recall.workers.as_of import ALLOWANCE_WINDOW_S, BuildAllowance


def test_each_token_has_its_own_allowance_over_a_sliding_hour() -> None:
    now = [1000.0]
    allowance = BuildAllowance(2, clock=lambda: now[0])
    assert allowance.take("ana") is None
    now[0] += 600
    assert allowance.take("ana") is None
    assert allowance.take("ana") == ALLOWANCE_WINDOW_S - 600  # the first build leaves the window then
    assert allowance.take("bob") is None  # another token's own
    now[0] += ALLOWANCE_WINDOW_S - 600
    assert allowance.take("ana") is None  # the first one has left the window
    assert allowance.take("ana") == 600
