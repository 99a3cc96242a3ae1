"""The replay's bulk path: windows of events applied with their positions, projections decoding only
the events they read, FTS and links applied set-wise, the snapshot keeping its states in memory
between windows. Each builds exactly what a plain Runner builds, whatever else happens meanwhile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from strata_recall.domain.memory import MEMORY_EVENTS, Memory
from strata_recall.interface.app.api import CommandAPI
from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.base import records_of
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection, fold_states
from strata_recall.workers.runner import ProjectionFailed, Runner, pipelined
from tests.integration.test_fold_equivalence import every_event

NAMES = ["fts", "links", "snapshot"]
STRATA = str(Path(sys.executable).parent / "strata")


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))
    yield app
    app.close()


def expected_digests(strata: Strata) -> dict[str, str]:
    projections = strata.projections(NAMES)
    Runner(strata.log, projections, batch_size=50).catch_up()
    out = {p.name: p.digest() for p in projections}
    for p in projections:
        p.reset()
    return out


@pytest.mark.parametrize(("batch_size", "window"), [(7, 30), (50, 1), (500, 40_000)])
def test_windows_build_what_a_runner_builds(hashed: Strata, batch_size: int, window: int) -> None:
    every_event(hashed)
    expected = expected_digests(hashed)
    projections = hashed.projections(NAMES)
    pipelined(hashed.log, projections, batch_size, window=window)
    head = hashed.log.position()
    for p in projections:
        assert (p.position, p.digest()) == (head, expected[p.name]), p.name


def test_each_projection_decodes_only_what_it_reads_and_still_reaches_the_head(
    hashed: Strata, api_of: Callable[..., CommandAPI]
) -> None:
    events = every_event(hashed)
    api = api_of(hashed)
    first = next(e for _, e in events if type(e) is Memory.MemoryWritten and e.status == "active")
    api.update(
        {
            "repo_id": first.repo_id,
            "memory_id": str(first.originator_id),
            "mode": "commit",
            "updates": {"truth": {"target": 0.9, "confidence": 0.9, "rationale": "checked", "evidence_refs": ["ci#1"]}},
        }
    )
    head = hashed.log.position()
    assert type(next(iter(hashed.log.read_log(head, 1)))[1]) is Memory.TruthAdjusted  # read by neither
    fts, links = hashed.projection("fts"), hashed.projection("links")
    decoded = pipelined(hashed.log, [fts, links], batch_size=20, window=60)
    assert decoded < head
    assert fts.position == links.position == head
    assert set(FTSProjection.topics() or ()) == {
        f"domain.memory:Memory.{n}"
        for n in (
            "MemoryWritten",
            "MemoryForgotten",
            "MemoryReviewed",
            "MemoryArchived",
            "MemoryRestored",
            "TextEdited",
        )
    }
    assert SnapshotProjection.reads is not None and LinksProjection.reads is not None


def test_handle_moves_the_position_through_events_it_does_not_read(tmp_path: Path, hashed: Strata) -> None:
    events = every_event(hashed)
    fts = FTSProjection(tmp_path / "fts.sqlite")
    assert fts.handle([], through=5) == 0
    assert fts.position == 5
    assert fts.handle(events[:3], through=4) == 0  # nothing past the position: re-delivery
    assert fts.position == 5
    applied = fts.handle([item for item in events[:40] if item[0] > 5], through=45)
    assert fts.position == 45 and applied == 35
    fts.close()


def test_the_snapshot_forgets_its_states_when_another_connection_writes(hashed: Strata, tmp_path: Path) -> None:
    """Between two windows another process rebuilds the snapshot to an earlier position: the states
    kept in memory are past what the table holds, so they are dropped and read back."""
    events = every_event(hashed)
    expected = SnapshotProjection(tmp_path / "expected.sqlite")
    expected.handle(events)
    path = tmp_path / "snap.sqlite"
    ours, other = SnapshotProjection(path), SnapshotProjection(path)
    half = len(events) // 2
    with ours.bulk():
        ours.handle(events[:half])
        other.reset()
        other.handle(events[: half // 3])
        ours.handle(events)
    assert ours.digest() == expected.digest()
    ids = [row[0] for row in expected.conn.execute("SELECT memory_id FROM snapshot")]
    assert {k: v.frozen() for k, v in ours.load_states(ids).items()} == {
        k: v.frozen() for k, v in expected.load_states(ids).items()
    }
    for p in (ours, other, expected):
        p.close()


def test_a_failed_window_leaves_no_state_behind(
    hashed: Strata, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window that fails after folding (its transaction rolled back) must not leave its folded
    states in memory: the next window folds from what the table holds."""
    events = every_event(hashed)
    expected = SnapshotProjection(tmp_path / "expected.sqlite")
    expected.handle(events)
    snapshot = SnapshotProjection(tmp_path / "snap.sqlite")
    third = len(events) // 3
    original = SnapshotProjection.apply

    def failing(self: SnapshotProjection, conn: Any, batch: Any, prepared: Any) -> None:
        original(self, conn, batch, prepared)
        raise OSError("disk full")

    with snapshot.bulk():
        snapshot.handle(events[:third])
        monkeypatch.setattr(SnapshotProjection, "apply", failing)
        with pytest.raises(OSError):
            snapshot.handle(events[: 2 * third])
        monkeypatch.setattr(SnapshotProjection, "apply", original)
        assert snapshot.position == events[third - 1][0]
        snapshot.handle(events)
    assert snapshot.digest() == expected.digest()
    snapshot.close()
    expected.close()


def test_a_failing_window_keeps_the_batches_before_the_failing_one(hashed: Strata, tmp_path: Path) -> None:
    every_event(hashed)

    class Broken(LinksProjection):
        def apply_records(self, conn, batch):  # type: ignore[no-untyped-def]
            if batch[-1][0] > 100:
                raise RuntimeError("disk full")
            super().apply_records(conn, batch)

    broken = Broken(tmp_path / "links.sqlite")
    with pytest.raises(ProjectionFailed, match="disk full"):
        pipelined(hashed.log, [broken], batch_size=10, window=1000)
    assert 0 < broken.position <= 100
    expected = LinksProjection(tmp_path / "expected.sqlite")
    expected.handle(list(hashed.log.read_log(1, broken.position)))
    assert expected.digest() == broken.digest()
    broken.close()
    expected.close()


def test_fts_applies_an_unusual_batch_event_by_event(hashed: Strata, tmp_path: Path) -> None:
    """A second write of a memory, a status before its write, a row already there: the set-wise
    apply steps aside and the result is what the event-by-event apply gives."""
    events = every_event(hashed)
    written = [item for item in events if type(item[1]) is Memory.MemoryWritten]
    forgotten = next(item for item in events if type(item[1]) is Memory.MemoryForgotten)
    batches = [
        [written[0], written[1], written[0]],  # a memory written twice
        [forgotten, *written[:5]],  # a status before any write
        [*written[:3]],  # rows already there (applied below over a projection that has them)
    ]
    for i, batch in enumerate(batches):
        fast, slow = FTSProjection(tmp_path / f"fast{i}.sqlite"), FTSProjection(tmp_path / f"slow{i}.sqlite")
        if i == 2:
            for p in (fast, slow):
                p.handle(written[:2])
        for p, apply in ((fast, fast.apply), (slow, slow._apply_each)):
            p.conn.execute("BEGIN")
            if apply == fast.apply:
                apply(p.conn, batch, None)
            else:
                apply(p.conn, records_of(batch))
            p.conn.execute("COMMIT")
        assert fast.digest() == slow.digest(), i
        indexed = "SELECT (SELECT count(*) FROM fts_docs), (SELECT coalesce(sum(documents), 0) FROM fts_parts)"
        assert fast.conn.execute(indexed).fetchone() == slow.conn.execute(indexed).fetchone()
        fast.close()
        slow.close()


def test_a_snapshot_record_is_its_values_and_its_stored_state(hashed: Strata, tmp_path: Path) -> None:
    events = every_event(hashed)
    states = fold_states({}, [e for _, e in events if isinstance(e, MEMORY_EVENTS)])
    for state in states.values():
        record = state.record()
        assert record[:-1] == state.values()
        assert bytes(record[-1]) == state.stored()
        assert type(record[-1]) is bytearray
    snapshot = SnapshotProjection(tmp_path / "snap.sqlite")
    snapshot.handle(events)
    assert {k: v.frozen() for k, v in snapshot.load_states(states).items()} == {
        k: v.frozen() for k, v in states.items()
    }
    assert snapshot.conn.execute("SELECT count(*) FROM snapshot WHERE typeof(state) != 'blob'").fetchone()[0] == 0
    snapshot.close()


def test_strata_replay_shares_the_projections_out_over_processes(hashed: Strata, data_dir: Path) -> None:
    every_event(hashed)
    expected = expected_digests(hashed)
    env = {**os.environ, "STRATA_DATA_DIR": str(data_dir)}
    args = [STRATA, "--json", "replay", "--processes", "2", *(f"--projection={n}" for n in NAMES)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["processes"] == 2
    head = hashed.log.position()
    assert {n: r["position"] for n, r in report["replayed"].items()} == dict.fromkeys(NAMES, head)
    for p in hashed.projections(NAMES):
        assert p.digest() == expected[p.name], p.name


DEFERRED = {
    SnapshotProjection: {"snapshot_scope", "snapshot_browse"},
    FTSProjection: {"fts_memories_id", "fts_memories_scope"},
}
DEFERRED[LinksProjection] = {"links_dst"}


def indexes(projection: Any) -> set[str]:
    return {
        row[0]
        for row in projection.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        if not row[0].startswith("sqlite_autoindex")
    }


@pytest.mark.parametrize("cls", list(DEFERRED))
def test_a_replay_into_an_empty_projection_builds_its_indexes_at_the_end(
    hashed: Strata, tmp_path: Path, cls: Any
) -> None:
    """The secondary indexes are dropped while a replay fills an empty projection and built once at its
    end; a projection that already holds rows keeps them throughout (building them again would cost more
    than it saves). Either way the rows are those of the same batches applied without bulk settings."""
    events = every_event(hashed)
    expected = cls(tmp_path / "expected.sqlite")
    expected.handle(events[:5])
    expected.handle(events)
    projection = cls(tmp_path / "replayed.sqlite")
    built = indexes(projection)
    assert built >= DEFERRED[cls]
    with projection.bulk():
        assert indexes(projection) == built - DEFERRED[cls]
        projection.handle(events[:5])
    assert indexes(projection) == built
    with projection.bulk():
        assert indexes(projection) == built
        projection.handle(events)
    assert indexes(projection) == built
    assert projection.digest() == expected.digest()
    projection.close()
    expected.close()


@pytest.mark.parametrize("cls", list(DEFERRED))
def test_a_replay_killed_midway_leaves_the_indexes_to_the_next_process_that_applies_events(
    hashed: Strata, tmp_path: Path, cls: Any
) -> None:
    events = every_event(hashed)
    path = tmp_path / "replayed.sqlite"
    projection = cls(path)
    built = indexes(projection)
    for index in DEFERRED[cls]:  # what a replay killed mid-way leaves: rows, and not these indexes
        projection.conn.execute(f"DROP INDEX {index}")
    projection.close()
    reader = cls(path)  # a process that only reads (a hook) does not wait on building them
    assert indexes(reader) == built - DEFERRED[cls]
    reader.close()
    follower = cls(path)  # the next one to apply events builds them first
    follower.handle(events[:5])
    assert indexes(follower) == built
    follower.close()


@pytest.mark.parametrize("window", [40_000, 30])
def test_fts_built_live_event_by_event_equals_its_replay(hashed: Strata, tmp_path: Path, window: int) -> None:
    """A memory that passes through a status of another part (pending, then approved) leaves that part
    made, and empty, when the events come one by one as a live worker may see them: a replay that
    sees both events in one window makes the same parts."""
    every_event(hashed)
    live = FTSProjection(tmp_path / "live.sqlite")
    Runner(hashed.log, [live], batch_size=1).catch_up()
    replayed = FTSProjection(tmp_path / "replayed.sqlite")
    pipelined(hashed.log, [replayed], 5000, window=window)
    assert live.conn.execute("SELECT count(*) FROM fts_parts WHERE documents = 0").fetchone()[0] > 0
    assert replayed.digest() == live.digest()
    live.close()
    replayed.close()


def test_a_memory_written_twice_is_kept_once_while_its_id_index_is_unbuilt(hashed: Strata, tmp_path: Path) -> None:
    """A replay into an empty fts projection builds the memory ids' unique index only at its end; a
    second write of a memory meanwhile (in a later window) is still ignored, as the table's uniqueness
    check ignores it when the events come one by one, and every lookup by id (statuses, edits) in the
    windows after the first finds the same rows."""
    records = records_of(every_event(hashed))
    first = next(r for r in records if r[1] is Memory.MemoryWritten)
    again = (records[-1][0] + 1, *first[1:])
    batches = [records[: len(records) // 3], records[len(records) // 3 :], [again]]
    live = FTSProjection(tmp_path / "live.sqlite")
    for batch in batches:
        live.handle_records(batch)
    replayed = FTSProjection(tmp_path / "replayed.sqlite")
    with replayed.bulk():
        assert "fts_memories_id" not in indexes(replayed)
        for batch in batches:
            replayed.handle_records(batch)
    assert "fts_memories_id" in indexes(replayed)
    count = "SELECT count(*) FROM fts_memories WHERE memory_id = ?"
    assert replayed.conn.execute(count, (first[2],)).fetchone()[0] == 1
    assert replayed.digest() == live.digest()
    live.close()
    replayed.close()
