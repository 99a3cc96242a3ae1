"""The embedded log's persistence: eventsourcing's SQLite module with a larger page cache.

The log's primary key (memory id, version) receives random UUIDs, so its index is written all over
the file; with SQLite's default 2 MB page cache a bulk import of 100,000 memories keeps evicting and
re-reading index pages. 64 MB per connection makes that import about 1.4x faster; small stores do
not notice.
"""

from __future__ import annotations

from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteFactory

CACHE_KIB = 65536


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
