"""A replay into an empty projection writes it with a rollback journal instead of the WAL (each page once
rather than twice: projections/store.py REPLAY_JOURNAL), and puts the file back in WAL mode at its end.
What must hold whatever happens meanwhile: a killed replay leaves a file the next process opens
consistent (the windows committed, nothing of the one in progress) and back in WAL mode; a failing window
rolls back; a reader that opens the file during the replay neither breaks it nor reads half a window."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from strata_recall.interface.app.bootstrap import Strata, build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection
from strata_recall.workers.runner import ProjectionFailed, Runner, pipelined
from tests.integration.test_fold_equivalence import every_event

CLASSES = {"fts": FTSProjection, "links": LinksProjection, "snapshot": SnapshotProjection}
NAMES = list(CLASSES)
STRATA = str(Path(sys.executable).parent / "strata")
SPILL_KIB = 64
"""A page cache this small spills a window's pages into the file before its commit (after syncing the
journal): the state a crash or a failure must undo, not only a journal beside an untouched file."""


@pytest.fixture
def hashed(data_dir: Path) -> Iterator[Strata]:
    app = build(load_settings(environ={}, data_dir=data_dir), embedder=HashEmbedder(dim=32))
    yield app
    app.close()


def journal_mode(path: Path) -> str:
    conn = store.connect(path)
    try:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        conn.close()


def digest_through(name: str, events: list[Any], position: int, folder: Path, *, rows: bool = False) -> str:
    """The digest of projection `name` with every event up to `position` applied (a Runner's rows); `rows`:
    of its digest queries' rows only, as any connection can read them (fts's digest() adds FTS5's postings)."""
    projection = CLASSES[name](folder / f"expected-{name}-{position}.sqlite")
    projection.handle([e for e in events if e[0] <= position], through=position)
    try:
        return store.table_digest(projection.conn, projection.digest_queries) if rows else projection.digest()
    finally:
        projection.close()


def integrity(path: Path) -> str:
    conn = store.connect(path)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("name", NAMES)
def test_a_replay_into_an_empty_projection_writes_with_a_rollback_journal_and_ends_in_wal_mode(
    hashed: Strata, tmp_path: Path, name: str
) -> None:
    events = every_event(hashed)
    path = tmp_path / f"{name}.sqlite"
    projection = CLASSES[name](path)
    with projection.bulk():
        assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        projection.handle(events[: len(events) // 2])
        projection.handle(events)
        assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0  # nothing went there
    assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not Path(f"{path}-journal").exists()
    assert projection.digest() == digest_through(name, events, events[-1][0], tmp_path)
    with projection.bulk():  # a projection that holds rows: the WAL throughout, as a worker writes it
        assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    projection.close()


def test_a_replay_stays_in_wal_mode_while_another_connection_has_the_file_open(hashed: Strata, tmp_path: Path) -> None:
    """SQLite refuses to leave WAL mode while another connection has the file open, at once (no wait on
    the busy timeout): the replay then writes in WAL mode, the same rows."""
    events = every_event(hashed)
    path = tmp_path / "fts.sqlite"
    projection = FTSProjection(path)
    other = store.connect(path)
    other.execute("SELECT count(*) FROM tracking").fetchone()
    started = time.monotonic()
    with projection.bulk():
        assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        projection.handle(events)
    assert time.monotonic() - started < 10
    assert projection.digest() == digest_through("fts", events, events[-1][0], tmp_path)
    other.close()
    projection.close()


def test_a_replay_stays_in_wal_mode_while_a_statement_of_its_own_connection_is_still_reading(tmp_path: Path) -> None:
    """A cursor not run to its end (an extension's statement: the vector projection met one) makes SQLite
    refuse the switch ("from within a transaction"): the bulk settings stay in WAL mode, and do not fail."""
    conn = store.connect(tmp_path / "file.sqlite")
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    reading = conn.execute("SELECT x FROM t")
    assert reading.fetchone() is not None  # more rows to come: the statement is still reading
    with store.bulk(conn, fresh=True):
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        reading.close()
        with store.transaction(conn):
            conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(10)])
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 20
    conn.close()


def test_strata_replay_writes_each_projection_with_a_rollback_journal(hashed: Strata, data_dir: Path) -> None:
    """`strata replay` resets the projections in its own process and closes them before its replaying
    processes open them: left open, they would keep every file in WAL mode."""
    every_event(hashed)
    hashed.close()
    env = {**os.environ, "STRATA_DATA_DIR": str(data_dir), "STRATA_LOG_LEVEL": "info", "STRATA_LOG_FORMAT": "json"}
    args = [STRATA, "--json", "replay", "--processes", "2", *(f"--projection={n}" for n in NAMES)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # the two processes' lines, one JSON object each (they may come without a line break between them)
    entries = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", done.stderr)]
    journals = {e["file"]: e["journal"] for e in entries if e.get("event") == "replay_journal"}
    assert journals == {f"{n}.sqlite": "delete" for n in NAMES}, done.stderr
    for name in NAMES:
        path = data_dir / "projections" / f"{name}.sqlite"
        assert journal_mode(path) == "wal"
        assert not Path(f"{path}-journal").exists()


KILLED_REPLAY = """
import os, signal, sys
from pathlib import Path
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections import store
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.workers.runner import pipelined

data, name, spill = sys.argv[1], sys.argv[2], int(sys.argv[3])
store.BULK_CACHE_KIB = spill
app = build(load_settings(environ={}, data_dir=Path(data)), embedder=HashEmbedder(dim=32))
projection = app.projection(name)
projection.reset()
cls, windows = type(projection), []
original = cls.apply_records

def dying(self, conn, batch):
    original(self, conn, batch)
    windows.append(len(batch))
    if len(windows) == 3:  # the third window applied, not committed
        os.kill(os.getpid(), signal.SIGKILL)

cls.apply_records = dying
pipelined(app.log, [projection], batch_size=10, window=30)
"""


@pytest.mark.parametrize("finisher", ["worker", "replay"])
@pytest.mark.parametrize("name", NAMES)
def test_a_replay_killed_mid_window_leaves_a_consistent_projection_that_is_finished_as_a_clean_one(
    hashed: Strata, data_dir: Path, tmp_path: Path, name: str, finisher: str
) -> None:
    events = every_event(hashed)
    hashed.release(NAMES)  # writing them opened some here: the replay is the file's only connection
    head = hashed.log.position()
    clean = digest_through(name, events, head, tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", KILLED_REPLAY, str(data_dir), name, str(SPILL_KIB)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    path = data_dir / "projections" / f"{name}.sqlite"
    assert Path(f"{path}-journal").stat().st_size > 0  # killed with a window half-written: a hot journal
    projection = CLASSES[name](path)  # the next process: SQLite rolls the window back as it opens the file
    assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not Path(f"{path}-journal").exists()
    assert integrity(path) == "ok"
    reached = projection.position
    assert 0 < reached < head
    assert projection.digest() == digest_through(name, events, reached, tmp_path)  # the committed windows only
    if finisher == "worker":
        Runner(hashed.log, [projection], batch_size=7).catch_up()
    else:
        pipelined(hashed.log, [projection], batch_size=10, window=30)
    assert (projection.position, projection.digest()) == (head, clean)
    projection.close()


@pytest.mark.parametrize("name", NAMES)
def test_a_window_failing_mid_transaction_rolls_back_to_the_windows_committed(
    hashed: Strata, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    events = every_event(hashed)
    monkeypatch.setattr(store, "BULK_CACHE_KIB", SPILL_KIB)
    cls = CLASSES[name]
    modes: list[str] = []

    class Failing(cls):  # type: ignore[valid-type,misc]
        def apply_records(self, conn: Any, batch: Any) -> None:
            super().apply_records(conn, batch)
            modes.append(conn.execute("PRAGMA journal_mode").fetchone()[0])
            if len(modes) >= 3:  # the third window, and each of its batches when they are tried alone
                raise OSError("disk full")

    path = tmp_path / f"{name}.sqlite"
    failing = Failing(path)
    with pytest.raises(ProjectionFailed, match="disk full"):
        pipelined(hashed.log, [failing], batch_size=10, window=30)
    assert set(modes) == {"delete"}
    reached = failing.position
    assert reached > 0
    assert failing.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert not Path(f"{path}-journal").exists()
    assert integrity(path) == "ok"
    assert failing.digest() == digest_through(name, events, reached, tmp_path)
    failing.close()


READ_DURING_REPLAY = """
import sys, time
from pathlib import Path
from strata_recall.interface.app.bootstrap import build
from strata_recall.interface.app.settings import load_settings
from strata_recall.projections.embedder import HashEmbedder
from strata_recall.workers.runner import pipelined

data, name, signals = sys.argv[1], sys.argv[2], Path(sys.argv[3])
app = build(load_settings(environ={}, data_dir=Path(data)), embedder=HashEmbedder(dim=32))
projection = app.projection(name)
projection.reset()
cls, applied, handled = type(projection), [], []
apply, handle = cls.apply_records, cls.handle_records

def slow_apply(self, conn, batch):
    apply(self, conn, batch)
    applied.append(len(batch))
    if len(applied) == 2:  # inside the second window's transaction
        (signals / "in-window").write_text(conn.execute("PRAGMA journal_mode").fetchone()[0])
        time.sleep(3)

def pausing_handle(self, batch, through=None):
    done = handle(self, batch, through)
    handled.append(done)
    if len(handled) == 2:  # the second window committed, the third not begun
        (signals / "between").write_text("")
        deadline = time.monotonic() + 60
        while not (signals / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return done

cls.apply_records, cls.handle_records = slow_apply, pausing_handle
pipelined(app.log, [projection], batch_size=10, window=30)
"""


def wait_for_file(path: Path, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, f"no {path.name}"
        time.sleep(0.005)


@pytest.mark.parametrize("name", NAMES)
def test_a_reader_that_opens_the_projection_during_a_replay_reads_committed_windows_and_breaks_nothing(
    hashed: Strata, data_dir: Path, tmp_path: Path, name: str
) -> None:
    """Opened while a window is written (the replay holds the write lock), a connection cannot put the
    file back in WAL mode and does not wait to: it reads under the rollback journal's locks, and sees the
    windows committed. Opened between two windows, it puts the file in WAL mode, and the replay carries
    on in it. Either way the replay ends with the rows of a clean one, in WAL mode."""
    events = every_event(hashed)
    hashed.release(NAMES)  # writing them opened some here: the replay is the file's only connection
    head = hashed.log.position()
    signals = tmp_path / "signals"
    signals.mkdir()
    path = data_dir / "projections" / f"{name}.sqlite"
    child = subprocess.Popen(
        [sys.executable, "-c", READ_DURING_REPLAY, str(data_dir), name, str(signals)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_file(signals / "in-window", child)
        assert (signals / "in-window").read_text() == "delete"
        started = time.monotonic()
        reader = store.connect(path)
        assert time.monotonic() - started < 2  # it did not wait for the window (3 s)
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        reader.execute("BEGIN")  # one read: the position and the rows it holds
        reached = store.position(reader, name)
        seen = store.table_digest(reader, CLASSES[name].digest_queries)
        reader.execute("COMMIT")
        reader.close()
        assert 0 < reached < head
        assert seen == digest_through(name, events, reached, tmp_path, rows=True)
        assert child.poll() is None  # the window is still being written

        wait_for_file(signals / "between", child)
        reader = store.connect(path)
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # switched back between windows
        reader.close()
        (signals / "go").write_text("")
        _, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    projection = CLASSES[name](path)
    assert projection.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (projection.position, projection.digest()) == (head, digest_through(name, events, head, tmp_path))
    assert integrity(path) == "ok"
    projection.close()
