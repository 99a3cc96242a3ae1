"""The projection contract: a read model in its own SQLite file that applies a batch of log events
and its new position in one transaction, so a crash can neither skip nor repeat an event."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from projections import store
from projections.store import Connection, Migration

Positioned = tuple[int, Any]
"""(log position, domain event)"""


class Projection(ABC):
    name: ClassVar[str]
    migrations: ClassVar[Sequence[Migration]]
    tables: ClassVar[Sequence[str]]
    """Every table the migrations create, dropped by reset()."""
    digest_queries: ClassVar[Sequence[str]]
    """Ordered queries whose rows define the projection's content (see digest())."""
    count_query: ClassVar[str]
    needs_vectors: ClassVar[bool] = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = store.FileLock(path.with_suffix(".lock"))
        self.conn = store.connect(path, vectors=self.needs_vectors)
        store.migrate(self.conn, self.name, self.migrations)
        self.opened()

    def opened(self) -> None:
        """Hook after the schema is current (e.g. to check the embedding model)."""

    @property
    def position(self) -> int:
        return store.position(self.conn, self.name)

    def handle(self, batch: Sequence[Positioned]) -> int:
        """Apply the events of `batch` this projection has not applied yet; return how many.
        Events at or below the current position are skipped, so re-delivery is harmless."""
        done = self.position
        pending = [item for item in batch if item[0] > done]
        if not pending:
            return 0
        prepared = self.prepare(pending)
        with store.transaction(self.conn):
            # another process may have moved this projection while we prepared
            done = store.position(self.conn, self.name)
            pending = [item for item in pending if item[0] > done]
            if pending:
                self.apply(self.conn, pending, prepared)
                store.set_position(self.conn, self.name, pending[-1][0])
        return len(pending)

    def prepare(self, batch: Sequence[Positioned]) -> Any:
        """Slow work done outside the transaction (embedding); its result is passed to apply()."""
        return None

    @abstractmethod
    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        """Write the rows for `batch`. Runs inside the transaction that also moves the position."""

    def follow(self) -> None:
        """Declare that this process keeps the projection current (a worker): no rebuild meanwhile."""
        self.lock.acquire(exclusive=False)

    def reset(self) -> None:
        """Drop every table and start again from position zero (the log is never touched). Refused
        with ProjectionBusy while a worker follows the projection."""
        self.lock.acquire(exclusive=True)
        try:
            self._reset()
        finally:
            self.lock.release()

    def _reset(self) -> None:
        with store.transaction(self.conn):
            for table in self.tables:
                self.conn.execute(f"DROP TABLE IF EXISTS {table}")
            self.conn.execute("DELETE FROM migrations WHERE name LIKE ?", (f"{self.name}.%",))
            self.conn.execute("DELETE FROM tracking WHERE projection = ?", (self.name,))
        store.migrate(self.conn, self.name, self.migrations)
        self.opened()

    def record_error(self, at: int, message: str) -> None:
        store.record_error(self.conn, self.name, at, message)

    def status(self) -> dict[str, Any]:
        row = store.tracking_row(self.conn, self.name)
        row["rows"] = self.conn.execute(self.count_query).fetchone()[0]
        return row

    def digest(self) -> str:
        return store.table_digest(self.conn, self.digest_queries)

    def close(self) -> None:
        self.lock.release()
        self.conn.close()
