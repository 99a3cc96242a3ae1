"""The log's persistence: eventsourcing's SQLite module with a larger page cache (the embedded
default), or its PostgreSQL module behind a connection check that fails fast and quietly (shared).

SQLite: the log's primary key (memory id, version) receives random UUIDs, so its index is written all
over the file; with SQLite's default 2 MB page cache a bulk import of 100,000 memories keeps evicting
and re-reading index pages. 64 MB per connection makes that import about 1.4x faster; small stores do
not notice.

PostgreSQL: eventsourcing's own module (table `strata_events`, created on first use). Inserts take
an EXCLUSIVE lock on the table, so notification ids commit in the order they were issued: a reader
that has seen id n will never see a smaller id appear later. Ids can still have gaps (the sequence
does not roll back with a failed insert, e.g. a writer that lost a race on the same memory); every
reader of the log reads "from position p onwards", so gaps are harmless.

Before eventsourcing opens its pool, StrataPostgresFactory makes one direct connection with a short
timeout, so an unreachable server or a wrong password is one clear EventStoreUnavailable at once
(rather than a pool timeout after 30 s, retried ten times), with the password scrubbed from the
message; once the pool holds the password, it is removed from the application's environment, which
nothing reads again. The same connection decides whether the tables need creating and, if so,
creates them under an advisory lock, one process at a time: eventsourcing's DDL is not safe to run
from several processes at once ("tuple concurrently updated"), and agents and read nodes often start
together. When the tables exist no DDL runs at all.

Outages (the server restarting, crashed, or out of reach): eventsourcing retries every read and
insert ten times, each waiting up to the pool's timeout (POSTGRES_CONNECT_TIMEOUT) for a connection,
which rides out a restart in a worker or a CLI command but held a request for 20 s to minutes. A
serving process runs each request's log operations under `waiting_at_most(seconds)`: an operation
then waits for a connection and retries only until that many seconds have passed, and while the log
is known to be unreachable (`LogLink`, which every operation of the process updates) each attempt
gets only FAIL_FAST_S, so a request behind another does not wait again. Past its bound an operation
raises what the recorder raises (OperationalError); callers make that 503 `event_log_unavailable`
(`log_unavailable`), and the read path answers from the node's projections instead
(projections/top_of_block.py). Threads outside such a block (the projection runner, CLI commands)
keep eventsourcing's ten attempts.

The PostgreSQL classes are built on first use (eventsourcing.postgres and psycopg take ~0.2 s to
import, which the embedded default should not pay on every command).
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache, wraps
from typing import Any
from uuid import UUID

from eventsourcing.persistence import InterfaceError, OperationalError
from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory
from eventsourcing.utils import Environment

from strata_recall.domain.errors import StrataError, Unavailable

CACHE_KIB = 65536
PROBE_TIMEOUT_S = 5
PASSWORD_KEYS = ("POSTGRES_PASSWORD",)
SQLiteOperationalError = sqlite3.OperationalError
"""What the SQLite log's driver raises when its file cannot be opened or written right now (busy, full disk,
I/O error), before eventsourcing wraps it: for callers that open the log, without naming the driver."""
DDL_LOCK = 0x5374726174614444
"""The advisory lock key under which the log's tables are created ("StrataDD")."""
FAIL_FAST_S = 0.05
"""What an attempt inside `waiting_at_most` may wait for a connection while the log is known to be
unreachable: enough to take a connection the pool holds ready (and so to notice the log is back)."""
RETRY_WAIT_S = 0.2
MAX_ATTEMPTS = 10
"""eventsourcing's retry policy for its PostgreSQL recorder, kept outside `waiting_at_most`."""
LOG_ERRORS = (OperationalError, InterfaceError)
"""What the recorders raise when the log cannot be reached (a lost connection, a pool timeout, a
SQLite file that is locked, full or failing)."""


class EventStoreUnavailable(Unavailable):
    """The event log cannot be reached or written (its server is down, its disk is full); nothing was
    recorded."""


def log_unavailable(exc: BaseException) -> EventStoreUnavailable:
    """The caller's answer to a log error (LOG_ERRORS) outside a command: 503 `event_log_unavailable`.
    Commands say themselves what was recorded (domain/application.py)."""
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return EventStoreUnavailable(
        "event_log_unavailable",
        "",
        f"the event log cannot be reached right now ({detail}): retry in a few seconds",
    )


class LogLink:
    """How this process last found the event log: reachable, or unreachable since when (and why), and
    the head it last saw. Every bounded PostgreSQL operation updates it; readers (the read path's
    answers, /healthz, token checks) only look. A log that is not on a server is always reachable."""

    def __init__(self) -> None:
        self.down_since: float | None = None
        """time.monotonic() of the first failure since the last success; None while reachable."""
        self.error: str | None = None
        self.head_seen = 0
        self.reached_at = time.monotonic()

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def unreachable_for(self) -> float:
        since = self.down_since
        return 0.0 if since is None else max(0.0, time.monotonic() - since)

    def reached(self, head: int | None = None) -> None:
        if head is not None and head > self.head_seen:
            self.head_seen = head
        self.reached_at = time.monotonic()
        self.down_since, self.error = None, None

    def failed(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
        self.error = " ".join(str(exc).split())[:300] or type(exc).__name__


ALWAYS_UP = LogLink()
"""The link of a log that is a local file (SQLite): never marked down."""


def link_of(memory_log: Any) -> LogLink:
    """The LogLink of a MemoryLog (ALWAYS_UP unless its log is on PostgreSQL)."""
    link = getattr(getattr(memory_log, "recorder", None), "link", None)
    return link if isinstance(link, LogLink) else ALWAYS_UP


_bounds = threading.local()


@contextmanager
def waiting_at_most(seconds: float) -> Iterator[None]:
    """Log operations this thread makes in the block wait for an unreachable PostgreSQL log (a pooled
    connection, retries) at most `seconds` each, and only FAIL_FAST_S per attempt while the log is
    known to be down; past that they raise as the recorder does (OperationalError). Nests: the
    inner bound holds inside it."""
    prior = getattr(_bounds, "seconds", None)
    _bounds.seconds = seconds
    try:
        yield
    finally:
        _bounds.seconds = prior


def _pool_timeout(default: float, link: LogLink) -> float:
    """How long getconn may wait on this thread (see waiting_at_most)."""
    deadline: float | None = getattr(_bounds, "deadline", None)
    if deadline is not None:
        return max(0.001, min(default, deadline - time.monotonic()))
    seconds: float | None = getattr(_bounds, "seconds", None)
    if seconds is None:
        return default
    return min(default, FAIL_FAST_S if link.down else seconds)


def _bounded(method: Callable[..., Any], head: Callable[[Any], int | None] | None = None) -> Callable[..., Any]:
    """A recorder method without eventsourcing's retry decorator, retried here instead: as the
    decorator does outside `waiting_at_most`, up to the bound inside it. Each outcome is noted on the
    recorder's LogLink (`head`: the log head the result shows, if any)."""
    inner = getattr(method, "__wrapped__", method)

    @wraps(inner)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        link: LogLink = self.link
        seconds = getattr(_bounds, "seconds", None)
        deadline = None if seconds is None else time.monotonic() + (FAIL_FAST_S if link.down else seconds)
        prior = getattr(_bounds, "deadline", None)
        _bounds.deadline = deadline
        try:
            attempts = 0
            while True:
                try:
                    result = inner(self, *args, **kwargs)
                except LOG_ERRORS as exc:
                    link.failed(exc)
                    attempts += 1
                    wait = RETRY_WAIT_S * (1 + 0.1 * (random.random() - 0.5))
                    if attempts >= MAX_ATTEMPTS or (deadline is not None and time.monotonic() + wait >= deadline):
                        raise
                    time.sleep(wait)
                else:
                    link.reached(head(result) if head is not None else None)
                    return result
        finally:
            _bounds.deadline = prior

    return call


class TunedSQLiteConnectionPool(SQLiteConnectionPool):
    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        connection._sqlite_conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        return connection


class TunedSQLiteFactory(SQLiteFactory):
    def __init__(self, env):  # type: ignore[no-untyped-def]
        super().__init__(env)
        pool = self.datastore.pool  # not used yet: no connection has been made
        self.datastore.pool = TunedSQLiteConnectionPool(db_name=pool.db_name, lock_timeout=pool.lock_timeout)


def scrub(text: str, secret: str | None) -> str:
    """`text` with every occurrence of `secret` masked."""
    return text.replace(secret, "**********") if secret else text


def __getattr__(name: str) -> Any:
    # PERSISTENCE_MODULE "strata_recall.domain.persistence:StrataPostgresFactory" resolves through here
    if name == "StrataPostgresFactory":
        return postgres_factory()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@cache
def _bounded_postgres() -> tuple[Any, Any]:
    """eventsourcing's PostgreSQL pool and recorder, their waits bounded (the module notes)."""
    from eventsourcing.postgres import ConnectionPool, PostgresApplicationRecorder

    class BoundedPool(ConnectionPool):
        """eventsourcing's pool, whose wait for a connection honours `waiting_at_most`."""

        link: LogLink

        def getconn(self, timeout: float | None = None) -> Any:
            return super().getconn(_pool_timeout(self.timeout, self.link) if timeout is None else timeout)

    class BoundedRecorder(PostgresApplicationRecorder):
        """eventsourcing's recorder with its retries bounded by `waiting_at_most` and noted on `link`."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pool: Any = self.datastore.pool
            self.link: LogLink = pool.link

        insert_events = _bounded(PostgresApplicationRecorder.insert_events)
        select_events = _bounded(PostgresApplicationRecorder.select_events)
        select_notifications = _bounded(PostgresApplicationRecorder.select_notifications)
        max_notification_id = _bounded(PostgresApplicationRecorder.max_notification_id, head=lambda head: head)

    return BoundedPool, BoundedRecorder


@cache
def postgres_factory() -> type:
    from eventsourcing.persistence import ApplicationRecorder
    from eventsourcing.postgres import ConnectionPool, PostgresFactory
    from psycopg import sql

    BoundedPool, BoundedRecorder = _bounded_postgres()

    class StrataPostgresFactory(PostgresFactory):
        """eventsourcing's PostgresFactory after a fast, quiet connection check, with the log's tables
        created by one process at a time, and its waits for an unreachable server bounded where the
        caller asks (see the module notes)."""

        application_recorder_class = BoundedRecorder

        def __init__(self, env: Environment | Mapping[str, str] | None) -> None:
            env = env if isinstance(env, Environment) else Environment(env=dict(env or {}))
            password = env.get("POSTGRES_PASSWORD") or ""
            self._setup: Any = None
            self._create = True
            try:
                self._setup = connect(env, password)
                super().__init__(env)
                assert type(self.datastore.pool) is ConnectionPool
                pool: Any = self.datastore.pool  # not opened yet: the same pool, with a bounded getconn
                pool.__class__ = BoundedPool
                pool.link = LogLink()
            except StrataError:
                self._close_setup()
                raise
            except Exception as exc:  # a malformed setting: eventsourcing raises OSError/ValueError
                self._close_setup()
                raise EventStoreUnavailable(
                    "event_store_config", "postgres", scrub(f"PostgreSQL settings: {exc}", password)
                ) from None
            finally:
                for key in PASSWORD_KEYS:  # the pool keeps its own copy; nothing reads these again
                    for name in env.create_keys(key):
                        env.pop(name, None)

        def application_recorder(self) -> ApplicationRecorder:
            conn, self._setup = self._setup, None
            if conn is None or not super().env_create_table():
                return super().application_recorder()
            try:
                table = f"{self.env.name.lower() or 'stored'}_events"
                self._create = not _log_exists(conn, self.datastore.schema, table)
                if self._create:
                    conn.execute("SELECT pg_advisory_lock(%s)", (DDL_LOCK,))
                    conn.execute(
                        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.datastore.schema))
                    )
                return super().application_recorder()
            finally:
                conn.close()  # also releases the advisory lock

        def env_create_table(self) -> bool:
            return self._create and super().env_create_table()

        def _close_setup(self) -> None:
            if self._setup is not None:
                self._setup.close()
                self._setup = None

        def close(self) -> None:
            self._close_setup()
            super().close()

    StrataPostgresFactory.__module__ = __name__
    return StrataPostgresFactory


def _log_exists(conn: Any, schema: str, table: str) -> bool:
    """The events table, its notification index, the stored event type and the insert function, as
    eventsourcing 9.5 names them (PostgresApplicationRecorder)."""
    row = conn.execute(
        "SELECT to_regclass(format('%%I.%%I', %(s)s::text, %(t)s::text)) IS NOT NULL"
        " AND to_regclass(format('%%I.%%I', %(s)s::text, %(t)s || '_notification_id_idx')) IS NOT NULL"
        " AND to_regtype(format('%%I.%%I', %(s)s::text, 'stored_event_uuid')) IS NOT NULL"
        " AND EXISTS (SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        "             WHERE n.nspname = %(s)s AND p.proname = 'es_insert_events_uuid')",
        {"s": schema, "t": table},
    ).fetchone()
    return bool(row and row[0])


def connect(env: Environment, password: str) -> Any:
    """One direct connection with a short timeout (the pool would wait 30 s and retry ten times)."""
    import psycopg

    host, port = env.get("POSTGRES_HOST") or "", env.get("POSTGRES_PORT") or "5432"
    where = f"{env.get('POSTGRES_USER')}@{host}:{port}/{env.get('POSTGRES_DBNAME')}"
    try:
        return psycopg.connect(
            host=host,
            port=port,
            dbname=env.get("POSTGRES_DBNAME"),
            user=env.get("POSTGRES_USER"),
            password=password,
            connect_timeout=PROBE_TIMEOUT_S,
            autocommit=True,
        )
    except psycopg.Error as exc:
        detail = " ".join(str(exc).split())
        raise EventStoreUnavailable(
            "event_store_unavailable",
            "postgres",
            scrub(f"cannot use the PostgreSQL event log at {where}: {detail}", password),
        ) from None


def ids_starting(recorder: Any, hex_prefix: str) -> list[UUID]:
    """The ids of the log's aggregates whose hex form starts with `hex_prefix` (SQLite stores ids as hex:
    an index range; PostgreSQL as uuid: compared as text); none from a recorder that is neither."""
    table = recorder.events_table_name  # a fixed table name, not input
    if type(recorder).__module__ == "eventsourcing.postgres":
        from psycopg.sql import SQL, Identifier  # only imported when the log is on PostgreSQL

        statement = SQL(
            "SELECT DISTINCT originator_id FROM {schema}.{table} WHERE replace(originator_id::text, '-', '') LIKE %s"
        ).format(schema=Identifier(recorder.datastore.schema), table=Identifier(table))
        with recorder.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(statement, [hex_prefix + "%"])
            return [UUID(str(row["originator_id"])) for row in cursor.fetchall()]
    if hasattr(recorder, "datastore") and hasattr(recorder.datastore, "transaction"):
        sql = f"SELECT DISTINCT originator_id FROM {table} WHERE originator_id >= ? AND originator_id < ?"
        with recorder.datastore.transaction(commit=False) as cursor:
            cursor.execute(sql, [hex_prefix, hex_prefix + "g"])  # 'g' sorts after every hex digit
            return [UUID(row[0]) for row in cursor.fetchall()]
    return []
