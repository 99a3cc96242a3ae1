"""The log's persistence: eventsourcing's SQLite module with a larger page cache (the embedded
default), or its PostgreSQL module behind a connection check that fails fast and quietly (shared).

SQLite: the log's primary key (memory id, version) receives random UUIDs, so its index is written all
over the file; with SQLite's default 2 MB page cache a bulk import of 100,000 memories keeps evicting
and re-reading index pages. 64 MB per connection makes that import about 1.4x faster; small stores do
not notice.

PostgreSQL: eventsourcing's own module (tables `strata_events`, created on first use). Inserts take
an EXCLUSIVE lock on the table, so notification ids commit in the order they were issued: a reader
that has seen id n will never see a smaller id appear later. Ids can still have gaps (the sequence
does not roll back with a failed insert, e.g. a writer that lost a race on the same memory); every
reader of the log reads "from position p onwards", so gaps are harmless.

Before eventsourcing opens its pool, StrataPostgresFactory makes one direct connection with a short
timeout, so an unreachable server or a wrong password is one clear EventStoreUnavailable at once
(rather than a pool timeout after 30 s, retried ten times), with the password scrubbed from the
message; once the pool holds the password, it is removed from the application's environment, which
nothing reads again.
"""

from __future__ import annotations

from collections.abc import Mapping

from eventsourcing.postgres import PostgresFactory
from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory
from eventsourcing.utils import Environment

from domain.errors import StrataError

CACHE_KIB = 65536
PROBE_TIMEOUT_S = 5
PASSWORD_KEYS = ("POSTGRES_PASSWORD",)


class EventStoreUnavailable(StrataError):
    """The event log's server cannot be reached or used (nothing was recorded)."""


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


class StrataPostgresFactory(PostgresFactory):
    """eventsourcing's PostgresFactory after a fast, quiet connection check (see the module notes)."""

    def __init__(self, env: Environment | Mapping[str, str] | None) -> None:
        env = env if isinstance(env, Environment) else Environment(env=dict(env or {}))
        password = env.get("POSTGRES_PASSWORD") or ""
        try:
            probe(env, password)
            super().__init__(env)
        except StrataError:
            raise
        except Exception as exc:  # a malformed setting: eventsourcing raises OSError/ValueError
            raise EventStoreUnavailable("event_store_config", "postgres", scrub(f"PostgreSQL settings: {exc}", password)) from None
        finally:
            for key in PASSWORD_KEYS:  # the pool keeps its own copy; nothing reads these again
                for name in env.create_keys(key):
                    env.pop(name, None)


def probe(env: Environment, password: str) -> None:
    """Connect once, directly and with a short timeout; create the schema if one is named and missing."""
    import psycopg
    from psycopg import sql

    host, port = env.get("POSTGRES_HOST") or "", env.get("POSTGRES_PORT") or "5432"
    where = f"{env.get('POSTGRES_USER')}@{host}:{port}/{env.get('POSTGRES_DBNAME')}"
    try:
        with psycopg.connect(host=host, port=port, dbname=env.get("POSTGRES_DBNAME"), user=env.get("POSTGRES_USER"),
                             password=password, connect_timeout=PROBE_TIMEOUT_S, autocommit=True) as conn:
            schema = (env.get("POSTGRES_SCHEMA") or "").strip()
            if schema:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    except psycopg.Error as exc:
        detail = " ".join(str(exc).split())
        raise EventStoreUnavailable(
            "event_store_unavailable",
            "postgres",
            scrub(f"cannot use the PostgreSQL event log at {where}: {detail}", password),
        ) from None
