"""The top of block: the current state of every memory at a block height (a log position),
compacted periodically, plus the tail fold that brings it to any later position without waiting.

A memory's state is its aggregate, folded by the aggregate's own event handlers, so the snapshot,
the tail fold and the write side can never disagree about what an event means. Each row keeps the
aggregate's state (encoded as the log encodes events) beside the derived columns the read path
queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson

from domain import beliefs
from domain.memory import MEMORY_EVENTS, Memory
from projections.base import Positioned, Projection
from projections.store import Connection

COLUMNS = (
    "memory_id", "repo_id", "scope", "kind", "status", "text", "confidence", "truth", "utility",
    "utility_by_problem", "problem_ids", "related_ids", "change_chain", "evidence_refs", "validations",
    "reinforcements", "last_validated", "maturity", "created", "version",
)


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE snapshot (memory_id TEXT PRIMARY KEY, repo_id TEXT NOT NULL, scope TEXT NOT NULL,"
        " kind TEXT NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL, confidence REAL NOT NULL,"
        " truth REAL NOT NULL, utility REAL NOT NULL, utility_by_problem TEXT NOT NULL, problem_ids TEXT NOT NULL,"
        " related_ids TEXT NOT NULL, change_chain TEXT NOT NULL, evidence_refs TEXT NOT NULL,"
        " validations INTEGER NOT NULL, reinforcements INTEGER NOT NULL, last_validated TEXT NOT NULL,"
        " maturity TEXT NOT NULL, created TEXT NOT NULL, version INTEGER NOT NULL, state BLOB NOT NULL)"
    )
    conn.execute("CREATE INDEX snapshot_scope ON snapshot (repo_id, scope, status)")


# The aggregate's own attributes that hold datetimes: the state blob stores them as ISO strings.
_DATETIMES = ("_created_on", "_modified_on", "last_validated")
_EVENTSOURCING_KEYS = ("_id", "_version", "_pending_events")


def freeze(memory: Memory) -> bytes:
    """The aggregate's state as JSON (what eventsourcing's Snapshot.take keeps), for the tail fold."""
    state = dict(vars(memory))
    for key in _EVENTSOURCING_KEYS:
        del state[key]
    return orjson.dumps(state)


def thaw(memory_id: str, version: int, blob: bytes) -> Memory:
    """The aggregate back from its frozen state, as eventsourcing's Snapshot.mutate rebuilds one."""
    state = orjson.loads(blob)
    for key in _DATETIMES:
        state[key] = datetime.fromisoformat(state[key])
    state["_id"] = UUID(memory_id)
    state["_version"] = version
    state["_pending_events"] = []
    memory = object.__new__(Memory)
    memory.__dict__.update(state)
    return memory


def row_of(memory: Memory) -> dict[str, Any]:
    """The columns the read path queries, derived from the aggregate."""
    truth = memory.truth_value
    return {
        "memory_id": memory.memory_id,
        "repo_id": memory.repo_id,
        "scope": memory.scope,
        "kind": memory.kind,
        "status": memory.status,
        "text": memory.text,
        "confidence": memory.confidence,
        "truth": truth,
        "utility": memory.global_utility,
        "utility_by_problem": _json({k: memory.utility_for(k) for k in memory.utility if k}),
        "problem_ids": _json(memory.problem_ids),
        "related_ids": _json(memory.related_ids),
        "change_chain": _json(memory.changes),
        "evidence_refs": _json(memory.evidence_refs),
        "validations": memory.validations,
        "reinforcements": memory.reinforcements,
        "last_validated": memory.last_validated.isoformat(),
        "maturity": beliefs.maturity(memory.validations, truth),
        "created": memory.created_on.isoformat(),
        "version": memory.version,
    }


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def fold(memories: dict[str, Memory], events: Iterable[Any]) -> dict[str, Memory]:
    """Apply events to the memories they belong to (creating new ones); returns the touched ones."""
    touched: dict[str, Memory] = {}
    for event in events:
        key = str(event.originator_id)
        current = memories.get(key)
        if current is not None and event.originator_version <= current.version:
            continue  # already folded: re-delivery is harmless
        memory = event.mutate(current)
        memories[key] = touched[key] = memory
    return touched


class SnapshotProjection(Projection):
    name = "snapshot"
    migrations = (m001_create_tables,)
    tables = ("snapshot",)
    digest_queries = (f"SELECT {', '.join(COLUMNS)} FROM snapshot ORDER BY memory_id",)
    count_query = "SELECT count(*) FROM snapshot"

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        events = [event for _, event in batch if isinstance(event, MEMORY_EVENTS)]
        memories = self.load({str(e.originator_id) for e in events}, conn)
        touched = fold(memories, events)
        placeholders = ", ".join("?" * (len(COLUMNS) + 1))
        conn.executemany(
            f"INSERT OR REPLACE INTO snapshot ({', '.join(COLUMNS)}, state) VALUES ({placeholders})",
            [(*row_of(m).values(), freeze(m)) for m in touched.values()],
        )

    def load(self, memory_ids: Iterable[str], conn: Connection | None = None) -> dict[str, Memory]:
        conn = conn or self.conn
        ids = list(memory_ids)
        out: dict[str, Memory] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            sql = f"SELECT memory_id, version, state FROM snapshot WHERE memory_id IN ({','.join('?' * len(chunk))})"
            for memory_id, version, blob in conn.execute(sql, chunk):
                out[memory_id] = thaw(memory_id, version, blob)
        return out

    def rows(self) -> Iterator[dict[str, Any]]:
        for values in self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM snapshot ORDER BY memory_id"):
            yield dict(zip(COLUMNS, values, strict=True))

    def at(self, tail: Sequence[Positioned]) -> dict[str, dict[str, Any]]:
        """The tail fold: rows of the memories the events after the block height touch, as a fresh
        compaction at the tail's last position would write them. Other memories read as stored."""
        height = self.position
        events = [event for position, event in tail if position > height and isinstance(event, MEMORY_EVENTS)]
        memories = self.load({str(e.originator_id) for e in events})
        return {key: row_of(m) for key, m in fold(memories, events).items()}
