"""A projection's own SQLite file: connection (with sqlite-vec loadable), ordered migrations, and
the tracking row that moves in the same transaction as the rows it describes.

The stdlib sqlite3 here cannot load extensions, so projections use sqlean.py, a drop-in DB-API
module with FTS5 and extension loading.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlean as sqlite3
import structlog

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

Migration = Callable[[Any], None]

log = structlog.get_logger("strata.projections")

MMAP_BYTES = 1 << 30
CACHE_KIB = 32768

Connection = Any  # sqlean.Connection: a DB-API 2 connection
Error: type[Exception] = sqlite3.Error
IntegrityError: type[Exception] = sqlite3.IntegrityError
"""The driver's DB-API errors, for the projections to catch without naming the driver."""


PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
"""What Strata's data directory, its folders and files are created with: memories (and token hashes)
are no other local user's to read, whatever the umask. SQLite gives a database's -wal and -shm files
the database file's own permissions."""


def private_dir(path: Path) -> None:
    """`path` as a folder, created owner-only if it is new (its parents as usual); an existing folder
    is left as it is."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)


def private_file(path: Path | str) -> None:
    """`path` created empty and owner-only if it does not exist (an empty file is an empty SQLite
    database), before SQLite creates it with the umask's permissions; an existing file is left as it is."""
    if str(path) == ":memory:" or str(path).startswith("file:"):
        return
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE))


def connect(path: Path | str, *, vectors: bool = False) -> Connection:
    private_file(path)
    conn = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
    wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")  # a projection can always be rebuilt from the log
    conn.execute("PRAGMA foreign_keys=ON")
    # Reads touch rows all over the file (candidates of one query): map it rather than pread page
    # by page, and keep a bigger cache of hot pages (FTS index, snapshot rows).
    conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    conn.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    if vectors:
        import sqlite_vec  # here, not at the top: it imports numpy (~0.2 s), which the lifecycle hooks never need

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    return conn


def wal(conn: Connection) -> None:
    """Put the connection's file in WAL mode (readers and the one writer never wait for each other),
    as every connection does when it opens. SQLite refuses at once while a replay into the empty
    projection writes a window with its rollback journal (bulk(fresh=True)): the connection then reads under that journal's locks (it waits out a commit
    and never sees half a window) and the replay puts the file back in WAL mode at its end. Between
    two windows it succeeds: the replay's connection finds the file in WAL mode at its next
    transaction and carries on in it, the same rows with its pages written twice again. After a
    replay that was killed, the next connection rolls back what the journal holds (a window left
    half-written) and puts the file back in WAL mode."""
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_BUSY:
            raise


BULK_CACHE_KIB = 262144
BULK_CHECKPOINT_PAGES = 65536
REPLAY_JOURNAL = "delete"
"""The journal a replay into an empty projection writes with (bulk(fresh=True)) instead of the WAL, in
which every page is written twice (into the WAL, then by the checkpoint into the file). A rollback
journal keeps a page's old content only if the page was in the file when the transaction began, and
such a replay mostly adds pages at the file's end (and reuses the freed pages of the reset, which
SQLite does not journal either), so most pages are written once; a window that fails still rolls
back, and a killed process leaves a journal that the next connection rolls back. `delete` rather
than `truncate` or `persist`: no journal file stays beside the projection afterwards (the switch back
to WAL does not remove one). The synchronous level stays NORMAL: the journal is synced before the
file's pages are written, so a crash of the machine leaves a consistent file too (SQLite's documentation
allows a very small chance of corruption at a power failure in this mode on older file systems)."""


@contextmanager
def bulk(conn: Connection, *, fresh: bool = False) -> Iterator[Connection]:
    """Settings for a replay's large batches, restored afterwards: a page cache big enough to hold a
    batch's changes (a smaller one spills them to the file mid-transaction and writes pages twice)
    and fewer, larger checkpoints. Durability is unchanged: every batch still commits with its
    position, so a crash leaves a consistent projection that a replay restarts or a worker resumes.
    `fresh`: the projection is empty (a replay from position zero), so it is written with a rollback
    journal (REPLAY_JOURNAL) and put back in WAL mode at the end. SQLite refuses the switch at once
    while another connection has the file open (a reader, the process that reset it): the replay
    then runs in WAL mode as before."""
    cache = conn.execute("PRAGMA cache_size").fetchone()[0]
    checkpoint = conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
    conn.execute(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
    conn.execute(f"PRAGMA wal_autocheckpoint={BULK_CHECKPOINT_PAGES}")
    journal = fresh and _journal(conn, REPLAY_JOURNAL) == REPLAY_JOURNAL
    if fresh:
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        log.info("replay_journal", file=Path(path).name, journal=REPLAY_JOURNAL if journal else "wal")
    try:
        yield conn
    finally:
        conn.execute(f"PRAGMA cache_size={cache}")
        conn.execute(f"PRAGMA wal_autocheckpoint={checkpoint}")
        if not journal:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        elif _journal(conn, "wal") != "wal":  # e.g. a reader kept a read open for the whole busy timeout
            log.warning("projection_journal_kept", journal=REPLAY_JOURNAL, until="the next connection opened")


def _journal(conn: Connection, mode: str) -> str:
    """Set the file's journal mode, and return the mode it is in afterwards: SQLite refuses, and the file
    stays in its mode, while another connection has it open (leaving WAL: at once) or holds a read
    through the busy timeout (entering it), or while a statement of this connection is still reading (a
    cursor not run to its end: "from within a transaction"). A replay's switch is only ever a saving, so
    a refusal never fails it."""
    try:
        return str(conn.execute(f"PRAGMA journal_mode={mode}").fetchone()[0])
    except sqlite3.OperationalError as exc:
        log.info("journal_mode_kept", wanted=mode, reason=str(exc))
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])


def select_in(
    conn: Connection, sql: str, keys: Sequence[Any], params: Sequence[Any] = (), chunk: int = 500
) -> Iterator[Any]:
    """The rows of `sql`, whose `{marks}` is an IN list of `keys`, run over chunks of them (SQLite
    caps the parameters of one statement); `params` are bound before each chunk's keys."""
    for i in range(0, len(keys), chunk):
        part = keys[i : i + chunk]
        yield from conn.execute(sql.format(marks=",".join("?" * len(part))), [*params, *part])


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class ProjectionBusy(RuntimeError):
    """Another process follows this projection, so it cannot be rebuilt now."""


class FileLock:
    """An advisory lock beside a projection file: workers hold it shared while they follow the
    projection, a rebuild needs it exclusive (dropping tables under a running worker would lose its
    writes). Where advisory locks do not exist (Windows) it does nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: Any = None

    def acquire(self, *, exclusive: bool) -> None:
        if fcntl is None:
            return
        if self._handle is None:
            private_file(self.path)
            self._handle = open(self.path, "a+")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(self._handle, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ProjectionBusy(str(self.path)) from None

    def release(self) -> None:
        if self._handle is not None and fcntl is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def _m000_bookkeeping(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS tracking ("
        " projection TEXT PRIMARY KEY, position INTEGER NOT NULL, updated_at REAL NOT NULL,"
        " last_error TEXT, error_position INTEGER, error_count INTEGER NOT NULL DEFAULT 0)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")


def migrate(conn: Connection, name: str, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not applied yet, in order, each in its own transaction."""
    _m000_bookkeeping(conn)
    done = {row[0] for row in conn.execute("SELECT name FROM migrations")}
    applied = []
    for migration in migrations:
        key = f"{name}.{migration.__name__}"
        if key in done:
            continue
        with transaction(conn):
            migration(conn)
            conn.execute("INSERT INTO migrations VALUES (?, ?)", (key, time.time()))
        applied.append(key)
    with transaction(conn):
        conn.execute(
            "INSERT OR IGNORE INTO tracking (projection, position, updated_at) VALUES (?, 0, ?)", (name, time.time())
        )
    return applied


def position(conn: Connection, name: str) -> int:
    row = conn.execute("SELECT position FROM tracking WHERE projection = ?", (name,)).fetchone()
    return row[0] if row else 0


def set_position(conn: Connection, name: str, value: int) -> None:
    conn.execute(
        "UPDATE tracking SET position = ?, updated_at = ?, last_error = NULL, error_position = NULL"
        " WHERE projection = ?",
        (value, time.time(), name),
    )


def record_error(conn: Connection, name: str, at: int, message: str) -> None:
    with transaction(conn):
        conn.execute(
            "UPDATE tracking SET last_error = ?, error_position = ?, error_count = error_count + 1,"
            " updated_at = ? WHERE projection = ?",
            (message[:2000], at, time.time(), name),
        )


def tracking_row(conn: Connection, name: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT position, updated_at, last_error, error_position, error_count FROM tracking WHERE projection = ?",
        (name,),
    ).fetchone()
    keys = ("position", "updated_at", "last_error", "error_position", "error_count")
    return dict(zip(keys, row, strict=True)) if row else dict.fromkeys(keys)


def table_digest(conn: Connection, queries: Sequence[str]) -> str:
    """A content digest over ordered queries: equal digests mean equal projections."""
    digest = hashlib.sha256()
    for query in queries:
        digest.update(query.encode())
        for row in conn.execute(query):
            digest.update(repr(tuple(_stable(v) for v in row)).encode())
    return digest.hexdigest()


def _stable(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    return value


def tidy(path: Path) -> None:
    """Checkpoint a projection file's write-ahead log into it (truncating the log) and let SQLite
    refresh its query planner's statistics, on a connection of its own (housekeeping)."""
    conn = connect(path, vectors=True)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA optimize")
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What the projections' SQLite driver provides here (`strata doctor`)."""

    sqlite: str
    """SQLite's version."""
    vec: str
    """sqlite-vec's version."""


def capabilities() -> Capabilities:
    """The driver's versions, after checking that it has FTS5 with the porter stemmer and loads sqlite-vec:
    raises the driver's error if it does not."""
    conn = connect(":memory:", vectors=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='porter unicode61')")
        vec = conn.execute("SELECT vec_version()").fetchone()[0]
        sqlite = conn.execute("SELECT sqlite_version()").fetchone()[0]
    finally:
        conn.close()
    return Capabilities(sqlite, vec)
