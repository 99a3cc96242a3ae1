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

The PostgreSQL classes are built on first use (eventsourcing.postgres and psycopg take ~0.2 s to
import, which the embedded default should not pay on every command).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory
from eventsourcing.utils import Environment

from strata_recall.domain.errors import StrataError, Unavailable

CACHE_KIB = 65536
PROBE_TIMEOUT_S = 5
PASSWORD_KEYS = ("POSTGRES_PASSWORD",)
DDL_LOCK = 0x5374726174614444
"""The advisory lock key under which the log's tables are created ("StrataDD")."""


class EventStoreUnavailable(Unavailable):
    """The event log cannot be reached or written (its server is down, its disk is full); nothing was
    recorded."""


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
def postgres_factory() -> type:
    from eventsourcing.persistence import ApplicationRecorder
    from eventsourcing.postgres import PostgresFactory
    from psycopg import sql

    class StrataPostgresFactory(PostgresFactory):
        """eventsourcing's PostgresFactory after a fast, quiet connection check, with the log's tables
        created by one process at a time (see the module notes)."""

        def __init__(self, env: Environment | Mapping[str, str] | None) -> None:
            env = env if isinstance(env, Environment) else Environment(env=dict(env or {}))
            password = env.get("POSTGRES_PASSWORD") or ""
            self._setup: Any = None
            self._create = True
            try:
                self._setup = connect(env, password)
                super().__init__(env)
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
