"""RecentEvents (projections/top_of_block.py): the events the runner read last, handed to the read path's
tail fold only for ranges of positions they cover entirely."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from strata_recall.domain.memory import Memory
from strata_recall.projections.top_of_block import RecentEvents


def event(position: int) -> tuple[int, object]:
    """A memory event (the fold reads only those), standing for the one at `position`."""
    written = object.__new__(Memory.TruthAdjusted)
    object.__setattr__(written, "__dict__", {"originator_id": uuid.uuid4(), "timestamp": datetime.now(UTC)})
    return position, written


def test_a_range_is_taken_only_when_every_position_in_it_was_read() -> None:
    recent = RecentEvents()
    assert recent.take(0, 1) is None  # nothing read yet
    first = [event(p) for p in (1, 2, 4)]  # 3 is a gap in the log's ids: no event there
    recent.add(1, first)
    assert recent.take(0, 4) == first
    assert recent.take(1, 3) == first[1:2]
    assert recent.take(0, 5) is None  # 5 was not read yet
    more = [event(5), event(6)]
    recent.add(5, more)  # joins the covered range
    assert recent.take(2, 6) == [first[2], *more]
    assert recent.take(6, 6) == []


def test_a_batch_that_does_not_join_starts_the_range_again() -> None:
    recent = RecentEvents()
    recent.add(1, [event(1), event(2)])
    recent.add(10, [event(10), event(11)])  # 3..9 were never read here
    assert recent.take(0, 2) is None and recent.take(2, 11) is None
    assert [p for p, _ in recent.take(9, 11) or []] == [10, 11]
    recent.add(3, [event(3)])  # a runner reading again from further back (a projection that lagged)
    assert recent.take(2, 3) is not None and recent.take(9, 11) is None


def test_an_overlapping_batch_adds_only_what_is_new_and_the_oldest_go_first() -> None:
    recent = RecentEvents(keep=3)
    recent.add(1, [event(1), event(2)])
    recent.add(2, [event(2), event(3)])  # re-read 2: kept once
    assert [p for p, _ in recent.take(0, 3) or []] == [1, 2, 3]
    recent.add(4, [event(4), event(5)])  # over `keep`: 1 and 2 go, and with them the range before 3
    assert recent.take(0, 5) is None and recent.take(1, 5) is None
    assert [p for p, _ in recent.take(2, 5) or []] == [3, 4, 5]
    assert recent.start() == 2


def test_only_memory_events_are_kept() -> None:
    recent = RecentEvents()
    other = (2, object())  # e.g. a token's event: the fold never reads it
    recent.add(1, [event(1), other, event(3)])
    assert [p for p, _ in recent.take(0, 3) or []] == [1, 3]
