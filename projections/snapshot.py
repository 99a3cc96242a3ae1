"""The top of block: the current state of every memory at a block height (a log position),
compacted periodically, plus the tail fold that brings it to any later position without waiting.

A memory's state is its aggregate, folded by the aggregate's own event handlers, so the snapshot,
the tail fold and the write side can never disagree about what an event means. Each row keeps the
aggregate's state (encoded as the log encodes events) beside the derived columns the read path
queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from itertools import islice
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from strata_recall.domain import beliefs, transitions
from strata_recall.domain.memory import MEMORY_EVENTS, Memory
from strata_recall.domain.transitions import ATTRIBUTES, CREATED, MODIFIED, Transition
from strata_recall.domain.transitions import written as new_memory
from strata_recall.projections import store
from strata_recall.projections.base import (
    Positioned,
    Record,
    RecordProjection,
    event_of,
    kept_to_exit,
    records_of,
)
from strata_recall.projections.snapshot_queries import COLUMNS, SnapshotQueries
from strata_recall.projections.store import Connection


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE snapshot (memory_id TEXT PRIMARY KEY, repo_id TEXT NOT NULL, scope TEXT NOT NULL,"
        " kind TEXT NOT NULL, status TEXT NOT NULL, text TEXT NOT NULL, confidence REAL NOT NULL,"
        " truth REAL NOT NULL, utility REAL NOT NULL, utility_by_problem TEXT NOT NULL, problem_ids TEXT NOT NULL,"
        " related_ids TEXT NOT NULL, change_chain TEXT NOT NULL, evidence_refs TEXT NOT NULL,"
        " validations INTEGER NOT NULL, reinforcements INTEGER NOT NULL, last_validated TEXT NOT NULL,"
        " maturity TEXT NOT NULL, created TEXT NOT NULL, version INTEGER NOT NULL, state BLOB NOT NULL)"
    )
    conn.execute(INDEXES["snapshot_scope"])


def m002_browse_index(conn: Connection) -> None:
    """What the inspector's pages filter and sort by, per repo and for global memories (projections/
    browse.py): a page is read from this index alone, in order, and only its own rows are fetched."""
    conn.execute(INDEXES["snapshot_browse"])


INDEXES = {
    "snapshot_scope": "CREATE INDEX IF NOT EXISTS snapshot_scope ON snapshot (repo_id, scope, status)",
    "snapshot_browse": "CREATE INDEX IF NOT EXISTS snapshot_browse ON snapshot (scope, repo_id, created, memory_id,"
    " kind, status, maturity, truth, utility)",
}
"""The table's secondary indexes, built once at the end of a replay into an empty table
(Projection.deferred_indexes)."""


def m003_anchors_column(conn: Connection) -> None:
    """The code a memory is anchored to (domain/anchors.py), for reads with a workspace and
    `strata check`. Rows written before anchors existed have none."""
    conn.execute("ALTER TABLE snapshot ADD COLUMN anchors TEXT NOT NULL DEFAULT '[]'")


def freeze(memory: Memory) -> bytes:
    """The aggregate's state as JSON (what eventsourcing's Snapshot.take keeps), for the tail fold."""
    return orjson.dumps(memory.state())


def thaw(memory_id: str, version: int, blob: bytes) -> Memory:
    """The aggregate back from its frozen state, as eventsourcing's Snapshot.mutate rebuilds one."""
    return thaw_state(memory_id, version, orjson.loads(blob))


def row_of(memory: Memory) -> dict[str, Any]:
    """The columns the read path queries, derived from the aggregate."""
    state = dict(vars(memory))
    return state_row(memory.memory_id, memory.version, state)


def state_row(
    memory_id: str, version: int, state: dict[str, Any], created: str | None = None, validated: str | None = None
) -> dict[str, Any]:
    """The columns the read path queries, derived from a memory's state (the aggregate's attributes,
    as vars(memory) holds them): one derivation for the aggregate and the replay fold. `created`
    and `validated` are the ISO forms of the two datetimes, when the caller has them already."""
    return dict(zip(COLUMNS, state_values(memory_id, version, state, created, validated), strict=True))


def state_values(
    memory_id: str, version: int, s: dict[str, Any], created: str | None = None, validated: str | None = None
) -> tuple[Any, ...]:
    """state_row() as a tuple in COLUMNS order."""
    truth = beliefs.value(s["truth"])
    ledger = s["utility"]
    return (
        memory_id,
        s["repo_id"],
        s["scope"],
        s["kind"],
        s["status"],
        s["text"],
        s["confidence"],
        truth,
        beliefs.global_utility(ledger) if ledger else _NO_UTILITY,
        _json({k: beliefs.utility_for(ledger, k) for k in ledger if k}) if ledger else "{}",
        _dumps(s["problem_ids"]).decode() if s["problem_ids"] else "[]",  # lists of strings: no keys to sort
        _dumps(s["related_ids"]).decode() if s["related_ids"] else "[]",
        _json(s["changes"]) if s["changes"] else "[]",
        _dumps(s["evidence_refs"]).decode() if s["evidence_refs"] else "[]",
        s["validations"],
        s["reinforcements"],
        validated or _isoformat(s["last_validated"]),
        beliefs.maturity(s["validations"], truth),
        created or _isoformat(s["_created_on"]),
        version,
        _json(s["anchors"]) if s.get("anchors") else "[]",
    )


def _isoformat(moment: datetime | str) -> str:
    return moment if isinstance(moment, str) else moment.isoformat()


_NO_UTILITY = beliefs.global_utility({})


_dumps = orjson.dumps


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


# --- the replay fold: the same state on plain dicts ---------------------------------------------
#
# Folding through the aggregate costs ~40 us an event (eventsourcing's per-call argument binding,
# aggregate construction, freezing and thawing). A replay folds the same events into the same
# attribute dicts directly, with the transitions the aggregate's event methods apply
# (domain/transitions.py), and then, as Aggregate.Event.mutate does, the version and modified_on
# move (after the transition: it sees the previous event's time, as the aggregate's methods do).
# tests/integration/test_fold_equivalence.py checks, over histories with every event type, that
# both folds give byte-identical states and rows; an event type without a handler here is folded
# through the aggregate (and that test fails until a handler is added).


class MemoryState:
    """One memory during a fold: its id, version and attribute dict — vars(memory) without the
    eventsourcing keys, its datetimes kept as the ISO text the frozen state holds (parsing and
    formatting datetimes was a fifth of the fold).

    A memory the fold has only seen written keeps its MemoryWritten's time and fields instead of the
    dict (most memories of a replay: the fold made ~1.5 KB of dict and lists for each, and its rows
    read them back): its row is made straight from the fields (_written_record), and the dict only
    when something reads `state` (a later event, frozen(), the aggregate)."""

    __slots__ = ("_fields", "_stamp", "_state", "memory_id", "version")

    def __init__(
        self,
        memory_id: str,
        version: int,
        state: dict[str, Any] | None,
        stamp: str = "",
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        """`state`, or (None for it) the `stamp` and `fields` of the memory's MemoryWritten (version 1)."""
        self.memory_id, self.version, self._state, self._stamp, self._fields = memory_id, version, state, stamp, fields

    @property
    def state(self) -> dict[str, Any]:
        state = self._state
        if state is None:
            state = {CREATED: self._stamp, MODIFIED: self._stamp}
            state.update(new_memory(state, self._fields or {}))
            self._state, self._fields = state, None
        return state

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        self._state, self._fields = value, None

    @classmethod
    def thawed(cls, memory_id: str, version: int, blob: bytes) -> MemoryState:
        return cls(memory_id, version, orjson.loads(blob))

    def frozen(self) -> bytes:
        """The whole state as JSON: what freeze() makes of the aggregate, byte for byte."""
        return orjson.dumps(self.state)

    def stored(self) -> bytes:
        """What the table's state column keeps: the attributes its other columns do not hold (the
        text, ids and counts are not written twice: a row is ~40% smaller and its insert faster).
        The usual attributes as a JSON array in _STORED_ORDER (no keys to build or write), others
        as an object."""
        state = self.state
        if len(state) == len(ATTRIBUTES) and state.keys() >= _STORED_KEYS:
            return _dumps(_stored_values(state))
        return orjson.dumps({k: v for k, v in state.items() if k not in _IN_COLUMNS})

    @classmethod
    def restored(cls, memory_id: str, version: int, blob: bytes, columns: Sequence[Any]) -> MemoryState:
        """The state back from a row: `columns` are the row's _RESTORE_COLUMNS, `blob` its state
        column (stored(), or the whole state as rows written before stored() existed hold it)."""
        rest = orjson.loads(blob)
        if type(rest) is list:
            rest = dict(zip(_STORED_ORDER, rest, strict=True))
        elif "text" in rest:
            return cls(memory_id, version, rest)
        known = dict(zip(_RESTORE_COLUMNS, columns, strict=True))
        state: dict[str, Any] = {}
        for key in ATTRIBUTES:
            column = _IN_COLUMNS.get(key)
            if column is not None:
                value = known[column]
                state[key] = orjson.loads(value) if column in _JSON_RESTORED else value
            elif key in rest:
                state[key] = rest[key]
        for key, value in rest.items():  # attributes this code does not know yet keep their place last
            state.setdefault(key, value)
        return cls(memory_id, version, state)

    def values(self) -> tuple[Any, ...]:
        if self._state is None:
            return _written_record(self.memory_id, self._stamp, self._fields or {})[:-1]
        state = self._state
        return state_values(self.memory_id, self.version, state, state["_created_on"], state["last_validated"])

    def row(self) -> dict[str, Any]:
        return dict(zip(COLUMNS, self.values(), strict=True))

    def record(self) -> tuple[Any, ...]:
        """values() and then stored() as a bytearray (the driver binds it directly, where bytes go
        through its adapter lookup): a snapshot row as the table takes it."""
        if self._state is None:
            return _written_record(self.memory_id, self._stamp, self._fields or {})
        return (*self.values(), bytearray(self.stored()))


def _written_record(key: str, stamp: str, e: Mapping[str, Any]) -> tuple[Any, ...]:
    """MemoryState.record() of a memory only written: what state_values() and stored() make of the
    state written() gives (tests/integration/test_fold_equivalence.py checks both ways agree)."""
    confidence = e["confidence"]
    belief = beliefs.prior(confidence)
    truth = beliefs.value(belief)
    problem, related, refs, actor = e["problem_id"], e["related_ids"], e["evidence_refs"], e.get("actor")
    if actor is None:  # _STORED_ORDER's values
        stored = _dumps((stamp, e["rationale"], e["change_targets"], e["author"], belief, {}, None))
    else:
        stored = _dumps(
            {
                MODIFIED: stamp,
                "rationale": e["rationale"],
                "change_targets": e["change_targets"],
                "author": e["author"],
                "truth": belief,
                "utility": {},
                "review_note": None,
                "writer": actor,
            }
        )
    return (
        key,
        e["repo_id"],
        e["scope"],
        e["kind"],
        e["status"],
        e["text"],
        confidence,
        truth,
        _NO_UTILITY,
        "{}",
        _dumps((problem,)).decode() if problem else "[]",
        _dumps(related).decode() if related else "[]",
        "[]",
        _dumps(refs).decode() if refs else "[]",
        0,
        0,
        stamp,
        beliefs.maturity(0, truth),
        stamp,
        1,
        "[]",
        bytearray(stored),
    )


_IN_COLUMNS = {
    "_created_on": "created",
    "text": "text",
    "kind": "kind",
    "scope": "scope",
    "repo_id": "repo_id",
    "confidence": "confidence",
    "problem_ids": "problem_ids",
    "related_ids": "related_ids",
    "evidence_refs": "evidence_refs",
    "status": "status",
    "changes": "change_chain",
    "validations": "validations",
    "reinforcements": "reinforcements",
    "last_validated": "last_validated",
}
"""State attributes a snapshot row holds in columns of their own (as they are, or as JSON)."""
_RESTORE_COLUMNS = tuple(dict.fromkeys(_IN_COLUMNS.values()))
_STORED_ORDER = tuple(k for k in ATTRIBUTES if k not in _IN_COLUMNS)
_STORED_KEYS = frozenset(_STORED_ORDER)
_stored_values = itemgetter(*_STORED_ORDER)
_JSON_RESTORED = frozenset({"problem_ids", "related_ids", "evidence_refs", "change_chain"})


HANDLERS: dict[type, Transition] = {
    kind: transitions.TRANSITIONS[kind.__name__] for kind in MEMORY_EVENTS if kind is not Memory.MemoryWritten
}
"""Every event of MEMORY_EVENTS but MemoryWritten (which creates the state), with its transition."""


def _via_aggregate(current: MemoryState | None, record: Record) -> MemoryState:
    """An event without a handler: folded by the aggregate itself (correct, only slower)."""
    memory = None
    if current is not None:
        memory = thaw_state(current.memory_id, current.version, current.state)
    memory = event_of(record).mutate(memory)
    return MemoryState(memory.memory_id, memory.version, orjson.loads(freeze(memory)))


def thaw_state(memory_id: str, version: int, state: dict[str, Any]) -> Memory:
    """The aggregate from a MemoryState's attributes (datetimes parsed back)."""
    return Memory.from_state(memory_id, version, state)


def fold_states(states: dict[str, MemoryState], events: Sequence[Any]) -> dict[str, MemoryState]:
    """fold() on MemoryState: the same result, without building aggregates."""
    return fold_records(states, records_of([(0, event) for event in events]))


def fold_records(states: dict[str, MemoryState], records: Sequence[Record]) -> dict[str, MemoryState]:
    """fold_states() of the events' records (base.Record); returns the touched states."""
    touched: dict[str, MemoryState] = {}
    written = Memory.MemoryWritten
    handlers = HANDLERS
    for record in records:
        _, kind, key, version, stamp, fields = record
        current = states.get(key)
        if current is not None and version <= current.version:
            continue  # already folded: re-delivery is harmless
        if kind is written and current is None and version == 1:
            current = MemoryState(key, 1, None, stamp, fields)  # its state made only when read
        else:
            handler = handlers.get(kind)
            if handler is None or current is None or version != current.version + 1:
                current = _via_aggregate(current, record)  # (and its errors: a gap, a missing memory)
            else:
                state = current.state
                state.update(handler(state, fields))
                current.version = version
                state[MODIFIED] = stamp
        states[key] = touched[key] = current
    return touched


_MEMORY_KINDS = frozenset(MEMORY_EVENTS)
_first = itemgetter(0)


class SnapshotProjection(SnapshotQueries, RecordProjection):
    name = "snapshot"
    migrations = (m001_create_tables, m002_browse_index, m003_anchors_column)
    tables = ("snapshot",)
    digest_queries = (f"SELECT {', '.join(COLUMNS)} FROM snapshot ORDER BY memory_id",)
    count_query = "SELECT count(*) FROM snapshot"

    reads = MEMORY_EVENTS
    deferred_indexes = INDEXES
    bulk_states = 250_000
    """How many memories' states a replay keeps in memory between batches (~1 KB each; the oldest
    are dropped past it and read back from the table if touched again)."""

    def __init__(self, path: Path) -> None:
        self._states: dict[str, MemoryState] | None = None
        self._seen: int | None = None
        super().__init__(path)

    def bulk_started(self) -> None:
        self._states, self._seen = {}, None

    def bulk_ended(self) -> None:
        states, self._states, self._seen = self._states, None, None
        if states:
            kept_to_exit(states)

    def _handle(self, batch: Sequence[Any], through: int | None, as_records: bool) -> int:
        try:
            return super()._handle(batch, through, as_records)
        except BaseException:
            if self._states is not None:  # folded past what the table holds now: forget them
                self._states.clear()
                self._seen = None
            raise

    def apply_records(self, conn: Connection, batch: Sequence[Record]) -> None:
        kinds = _MEMORY_KINDS
        records = [r for r in batch if r[1] in kinds or issubclass(r[1], MEMORY_EVENTS)]
        # The table holds exactly the events up to this projection's position, and every event here
        # is past it: a memory created in this batch has no row yet, so only the others are loaded.
        # During a replay the states of earlier batches are still in memory (self._states), as long
        # as no other connection wrote to this file since (data_version moves with their commits).
        written = Memory.MemoryWritten
        created = {r[2] for r in records if r[1] is written and r[3] == 1}
        cached = self._states
        if cached is not None:
            seen = conn.execute("PRAGMA data_version").fetchone()[0]
            if seen != self._seen:
                cached.clear()
                self._seen = seen
        wanted = {r[2] for r in records} - created
        if cached:
            states = {k: cached[k] for k in wanted if k in cached}
            states.update(self.load_states(wanted - states.keys(), conn))
        else:
            states = self.load_states(wanted, conn)
        touched = fold_records(states, records)
        # the rows made in the order the fold touched the memories (the order their objects lie in memory:
        # made in the order of their ids, half the time went in cache misses), then sorted by id (the
        # table's order: each insert lands on the page before)
        rows = [state.record() for state in touched.values()]
        rows.sort(key=_first)
        placeholders = ", ".join("?" * (len(COLUMNS) + 1))
        conn.executemany(f"INSERT OR REPLACE INTO snapshot ({', '.join(COLUMNS)}, state) VALUES ({placeholders})", rows)
        if cached is not None:
            cached.update(touched)
            for key in list(islice(cached, max(0, len(cached) - self.bulk_states))):
                del cached[key]

    def load_states(self, memory_ids: Iterable[str], conn: Connection | None = None) -> dict[str, MemoryState]:
        conn = conn or self.conn
        sql = f"SELECT memory_id, version, state, {', '.join(_RESTORE_COLUMNS)} FROM snapshot WHERE memory_id IN ({{marks}})"
        return {
            memory_id: MemoryState.restored(memory_id, version, blob, columns)
            for memory_id, version, blob, *columns in store.select_in(conn, sql, sorted(memory_ids))
        }

    def load(self, memory_ids: Iterable[str], conn: Connection | None = None) -> dict[str, Memory]:
        """The aggregates of these memories as the snapshot holds them."""
        return {k: thaw_state(k, m.version, m.state) for k, m in self.load_states(memory_ids, conn).items()}

    def rows(self) -> Iterator[dict[str, Any]]:
        for values in self.conn.execute(f"SELECT {', '.join(COLUMNS)} FROM snapshot ORDER BY memory_id"):
            yield dict(zip(COLUMNS, values, strict=True))

    def at(self, tail: Sequence[Positioned]) -> dict[str, dict[str, Any]]:
        """The tail fold: rows of the memories the events after the block height touch, as a fresh
        compaction at the tail's last position would write them. Other memories read as stored."""
        height = self.position
        events = [event for position, event in tail if position > height and isinstance(event, MEMORY_EVENTS)]
        states = self.load_states({str(e.originator_id) for e in events})
        return {key: m.row() for key, m in fold_states(states, events).items()}
