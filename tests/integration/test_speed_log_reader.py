"""The replay's fast log reader (projections.base.LogReader) gives exactly what MemoryLog.read_log
gives: the same positions and equal domain events of the same types, for every event type in the
log, from any start, with and without topics; and its records (LogReader.records, made from the rows
without building events) are the records of those events (base.records_of)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from uuid import UUID

import orjson
import pytest

from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.base import LogReader, _uuid, records_of
from strata_recall.projections.embedder import HashEmbedder
from tests.integration.test_fold_equivalence import every_event


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))
    yield app
    app.close()


def same(a: list, b: list) -> None:
    assert [p for p, _ in a] == [p for p, _ in b]
    for (_, x), (_, y) in zip(a, b, strict=True):
        assert type(x) is type(y)
        assert vars(x) == vars(y)
        assert list(vars(x)) == list(vars(y))  # same attribute order, so re-encoding gives equal bytes
        assert type(x.originator_id) is type(y.originator_id)
        assert type(x.timestamp) is type(y.timestamp) and x.timestamp.tzinfo == y.timestamp.tzinfo


OWN = ("originator_id", "originator_version", "timestamp")
"""An event's attributes a record holds apart from its fields (base.Record)."""


def same_records(reader: LogReader, start: int, limit: int, topics: list[str] | None = None) -> None:
    """The reader's records from `start` are those of the events read_log reads."""
    fast = reader.records(start, limit, topics or ())
    slow = records_of(list(reader.log.read_log(start, limit, topics or ())))
    assert [r[:5] for r in fast] == [r[:5] for r in slow]
    for x, y in zip(fast, slow, strict=True):
        assert {k: v for k, v in x[5].items() if k not in OWN} == {k: v for k, v in y[5].items() if k not in OWN}


def test_the_fast_reader_reads_what_read_log_reads(hashed: Strata) -> None:
    every_event(hashed)
    reader = LogReader(hashed.log)
    assert reader.fast and reader.sqlite
    head = hashed.log.position()
    same(reader.read(1, head + 10), list(hashed.log.read_log(1, head + 10)))
    for start, limit in ((1, 7), (5, 50), (head - 3, 100), (head + 1, 10)):
        same(reader.read(start, limit), list(hashed.log.read_log(start, limit)))
        same_records(reader, start, limit)
    topics = ["domain.memory:Memory.MemoryWritten", "domain.memory:Memory.MemoryReviewed"]
    same(reader.read(1, 1000, topics), list(hashed.log.read_log(1, 1000, topics)))
    same_records(reader, 1, head + 10)
    same_records(reader, 1, 1000, topics)


def test_records_keep_the_times_and_ids_the_events_have(hashed: Strata) -> None:
    """Times stored in other forms than orjson's (no microseconds, another offset) and ids stored in
    capitals read back as the events' own: the records' text is the events' times and ids as
    records_of writes them."""
    every_event(hashed)
    recorder = hashed.log.recorder
    stamps = ["2026-01-02T03:04:05+00:00", "2026-01-02T03:04:05.000001+00:00", "2026-01-02T04:04:05.500000+01:00"]
    with recorder.datastore.transaction(commit=True) as c:
        c.execute(f"SELECT rowid, originator_id, state FROM {recorder.events_table_name} ORDER BY rowid LIMIT 4")
        rows = [tuple(r) for r in c.fetchall()]
        for (rowid, _, state), stamp in zip(rows, stamps, strict=False):
            fields = orjson.loads(state)
            fields["timestamp"]["_data_"] = stamp
            c.execute(
                f"UPDATE {recorder.events_table_name} SET state = ? WHERE rowid = ?", (orjson.dumps(fields), rowid)
            )
        rowid, originator_id, _ = rows[3]
        c.execute(
            f"UPDATE {recorder.events_table_name} SET originator_id = ? WHERE rowid = ?", (originator_id.upper(), rowid)
        )
    reader = LogReader(hashed.log)
    same_records(reader, 1, 10)
    assert [r[4] for r in reader.records(1, 3)] == [*stamps[:2], "2026-01-02T04:04:05.500000+01:00"]


def test_texts_that_look_like_custom_types_are_left_to_the_mapper(
    hashed: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    from tests.conftest import write_request

    api = api_of(hashed)
    for text in ('"_type_"', "_type_", '{"_type_": "datetime_iso", "_data_": "2020-01-01T00:00:00"}'):
        api.write(write_request("r", text))
    same(LogReader(hashed.log).read(1, 100), list(hashed.log.read_log(1, 100)))
    same_records(LogReader(hashed.log), 1, 100)


def test_uuids_equal_the_parsed_ones() -> None:
    for text in (
        "5b7c3f5e-2f0a-4a8e-9d7e-8f1d3a2c6b10",
        "00000000-0000-0000-0000-000000000000",
        "00003b7f8e875e20a7d614cff53501d6",
        "{5b7c3f5e-2f0a-4a8e-9d7e-8f1d3a2c6b10}",
    ):
        value = _uuid(text)
        assert value == UUID(text) and hash(value) == hash(UUID(text)) and str(value) == str(UUID(text))


ADDED = {
    "Memory.MemoryWritten": ("actor",),
    "Memory.TruthAdjusted": ("repo_id", "actor"),
    "Memory.UtilityObserved": ("repo_id", "actor"),
    "Memory.MemoryForgotten": ("repo_id", "actor"),
    "Memory.MemoryReviewed": ("actor",),
    "Memory.DuplicateMerged": ("actor",),
    "Memory.DuplicateUnmerged": ("actor",),
    "Memory.MemoryRestored": ("actor",),
    "Credential.TokenIssued": ("actor",),
    "Credential.TokenRevoked": ("actor",),
}
"""The fields each versioned event gained since its version 1 (in order: one a version)."""


@pytest.mark.parametrize("keep", [0, 1])
def test_events_recorded_before_a_class_version_are_upcast_alike(
    hashed: Strata, keep: int, api_of: Callable[..., CommandAPI]
) -> None:
    """A log written before events carried their origin repo (TruthAdjusted, UtilityObserved and
    MemoryForgotten version 1) or the token that acted (`actor`: every versioned event's latest
    version) reads back with those fields None, through the fast reader and the mapper alike.
    `keep`: how many of the added fields the rewritten events keep (0: version 1; 1: version 2)."""
    from strata_recall.domain.access import Principal
    from tests.conftest import write_request

    every_event(hashed)
    token = Principal("alice", frozenset({"read", "write"}), ("**",), True)
    api_of(hashed).write(write_request("repo-1", "written through a token"), principal=token)
    hashed.log.issue_token("bob", ["repo-*"], ["read"], False, actor="alice")
    hashed.log.revoke_token("bob", "left", actor="alice")
    recorder = hashed.log.recorder
    with recorder.datastore.transaction(commit=True) as c:
        c.execute(f"SELECT rowid, topic, state FROM {recorder.events_table_name}")
        rows = [tuple(r) for r in c.fetchall()]
        old: dict[str, int] = {}
        for rowid, topic, state in rows:
            name = topic.rpartition(":")[2]
            added = ADDED.get(name, ())[keep:]
            if not added:
                continue
            fields = orjson.loads(state)
            assert fields.pop("class_version") == len(ADDED[name]) + 1 and all(f in fields for f in added)
            for field in added:
                del fields[field]
            if keep:
                fields["class_version"] = keep + 1
            c.execute(
                f"UPDATE {recorder.events_table_name} SET state = ? WHERE rowid = ?", (orjson.dumps(fields), rowid)
            )
            old[name] = old.get(name, 0) + 1
    assert set(old) == {name for name, added in ADDED.items() if len(added) > keep}
    head = hashed.log.position()
    fast, slow = LogReader(hashed.log).read(1, head), list(hashed.log.read_log(1, head))
    same(fast, slow)
    same_records(LogReader(hashed.log), 1, head)
    upcast = [e for _, e in fast if type(e).__qualname__ in old]
    assert len(upcast) == sum(old.values()) and all(e.actor is None for e in upcast)
    assert all(getattr(e, "repo_id", None) is None for e in upcast if "repo_id" in ADDED[type(e).__qualname__][keep:])
