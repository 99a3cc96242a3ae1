"""The projection contract: a read model in its own SQLite file that applies a batch of log events
and its new position in one transaction, so a crash can neither skip nor repeat an event."""

from __future__ import annotations

import gc
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID, SafeUUID

import orjson
from eventsourcing.persistence import find_id_convertor
from eventsourcing.sqlite import SQLiteApplicationRecorder
from eventsourcing.utils import get_topic

from strata_recall.domain.topics import check_origin, creates, event_class
from strata_recall.domain.transcoder import OrjsonTranscoder
from strata_recall.projections import store
from strata_recall.projections.store import Connection, Migration

Positioned = tuple[int, Any]
"""(log position, domain event)"""

Record = tuple[int, type, str, int, str, dict[str, Any]]
"""An event as the projections that take records apply it (RecordProjection): (log position, the
event's class, its memory id as text, its version, its time as ISO text as orjson writes it, its
fields by name). The fields are vars(event), or the same values decoded straight from the log's row
(LogReader.records); originator_id, originator_version and timestamp are read from the record, never
from the fields (their form there differs between the two)."""


def iso_time(moment: datetime) -> str:
    """moment.isoformat(), as orjson writes it (the same text, four times faster)."""
    return orjson.dumps(moment).decode()[1:-1]


def record_of(position: int, event: Any) -> Record:
    """The record of an event."""
    fields = vars(event)
    return (
        position,
        type(event),
        str(fields["originator_id"]),
        fields["originator_version"],
        iso_time(fields["timestamp"]),
        fields,
    )


def records_of(batch: Sequence[Positioned]) -> list[Record]:
    return [record_of(position, event) for position, event in batch]


def event_of(record: Record) -> Any:
    """The event of a record, built as the log's mapper builds one (for what only an event can do:
    an aggregate's mutate)."""
    _, kind, key, version, stamp, fields = record
    values = dict(fields)
    values["timestamp"] = datetime.fromisoformat(stamp)
    values["originator_id"] = find_id_convertor(kind, UUID)(_uuid(key))
    values["originator_version"] = version
    event: object = object.__new__(kind)
    object.__setattr__(event, "__dict__", values)
    return event


_EXITING: list[Any] | None = None
"""What kept_to_exit() was handed, in a process that exits when its replay ends (None elsewhere)."""


def exit_after_replay() -> None:
    """This process exits when its replay ends (a replay's child process): what a projection lets go
    of at the end of its bulk (kept_to_exit) is left for the operating system to take back at the exit."""
    global _EXITING
    _EXITING = []


def kept_to_exit(value: Any) -> None:
    """A projection lets go of `value` (a replay's in-memory state, e.g. the snapshot's ~1 KB a
    memory): it is freed now, or, in a process that exits when its replay ends, at the exit, all at
    once (freeing 100,000 snapshot states one object at a time took ~0.1 s of CPU). What is kept is
    moved out of the garbage collector's sight (gc.freeze): the replay ran with the collector paused,
    and its first collection afterwards would otherwise walk every object kept (0.3-0.5 s at 100,000)."""
    if _EXITING is not None:
        _EXITING.append(value)
        gc.freeze()


class LogReader:
    """Reads (log position, domain event) pairs exactly as MemoryLog.read_log does, about twice as
    fast: replay is bound by decoding (eventsourcing's mapper spends most of its time parsing UUIDs
    and walking every event field for custom types).

    The shortcuts, each checked per event and otherwise left to the mapper: rows come straight from
    the SQLite table (the recorder's own query, without building a UUID object per row the slow way);
    an event whose only custom-typed value is its timestamp (the only `"_type_"` marker in its bytes)
    gets just that field revived; events of versioned classes are upcast here as the mapper would
    (their `upcast_vN_vN+1` methods, in order); ciphers and compressors go through the mapper.
    tests/integration/test_speed_log_reader.py checks equality with read_log.
    """

    def __init__(self, memory_log: Any) -> None:
        self.log = memory_log
        mapper = memory_log.mapper
        self.transcoder = mapper.transcoder
        self.fast = mapper.cipher is None and mapper.compressor is None and type(self.transcoder) is OrjsonTranscoder
        recorder = memory_log.recorder
        self.sqlite = (
            isinstance(recorder, SQLiteApplicationRecorder) and recorder.datastore.originator_id_type == "uuid"
        )
        self._classes: dict[str, tuple[type, Callable[[Any], Any], int, str | None]] = {}
        if self.fast:
            self._timestamp = self.transcoder.names["datetime_iso"].decode

    def read(self, start: int, limit: int, topics: Iterable[str] = ()) -> list[Positioned]:
        topics = list(topics)
        if not self.fast:
            return list(self.log.read_log(start, limit, topics))
        rows = self._rows(start, limit, topics)
        out: list[Positioned] = []
        append = out.append
        loads, timestamp, classes = orjson.loads, self._timestamp, self._classes
        new = object.__new__
        set_attr = object.__setattr__
        for position, originator_id, version, topic, state in rows:
            known = classes.get(topic)
            if known is None:
                known = classes[topic] = self._class_of(topic)
            values = loads(state)
            cls, convert, class_version, origin = known
            if origin is not None and values.get("originator_topic") != origin:  # a creating event names its own
                check_origin(topic, origin, values)  # aggregate, resolved when it is folded: refused otherwise
            stamp = values.get("timestamp")
            if (
                type(stamp) is dict
                and state.count(b'"_type_"') == 1
                and len(stamp) == 2
                and stamp.get("_type_") == "datetime_iso"
            ):
                values["timestamp"] = timestamp(stamp["_data_"])
            else:
                values = self.transcoder.revive(values)
            values["originator_id"] = convert(_uuid(originator_id) if type(originator_id) is str else originator_id)
            values["originator_version"] = version
            if class_version != 1 or "class_version" in values:
                _upcast(cls, class_version, values)  # after the ids, as the mapper does (attribute order)
            event: object = new(cls)
            set_attr(event, "__dict__", values)
            append((position, event))
        return out

    def records(self, start: int, limit: int, topics: Iterable[str] = ()) -> list[Record]:
        """read() as records (Record), made straight from the rows without building the events: the
        ids' text from the stored hex, the time's text as stored when it is already orjson's form (UTC,
        as the log writes it); anything else as read() decodes it. tests/integration/
        test_speed_log_reader.py checks equality with records_of(read_log)."""
        topics = list(topics)
        if not self.fast:
            return records_of(self.read(start, limit, topics))
        rows = self._rows(start, limit, topics)
        out: list[Record] = []
        append = out.append
        loads, classes = orjson.loads, self._classes
        for position, originator_id, version, topic, state in rows:
            known = classes.get(topic)
            if known is None:
                known = classes[topic] = self._class_of(topic)
            cls, _, class_version, origin = known
            values = loads(state)
            if origin is not None and values.get("originator_topic") != origin:  # as in read()
                check_origin(topic, origin, values)
            stamp = values.get("timestamp")
            if (
                type(stamp) is dict
                and len(stamp) == 2
                and stamp.get("_type_") == "datetime_iso"
                and state.count(b'"_type_"') == 1
            ):
                text = stamp["_data_"]
                if not (type(text) is str and len(text) in (25, 32) and text.endswith("+00:00")):
                    text = iso_time(self._timestamp(text))  # another form than orjson's: made orjson's
                values["timestamp"] = text
            else:
                values = self.transcoder.revive(values)
                text = values["timestamp"] = iso_time(values["timestamp"])
            # the recorder stores an id as its lower-case hex (islower: hex with a letter, else the long way)
            if type(originator_id) is str and len(originator_id) == 32 and originator_id.islower():
                o = originator_id
                key = f"{o[:8]}-{o[8:12]}-{o[12:16]}-{o[16:20]}-{o[20:]}"
            else:
                key = str(_uuid(originator_id) if type(originator_id) is str else originator_id)
            stored = values.pop("class_version", 1)
            if stored < class_version:
                _upcast_from(cls, stored, class_version, values)
            append((position, cls, key, version, text, values))
        return out

    def _rows(self, start: int, limit: int, topics: list[str]) -> list[tuple[Any, ...]]:
        """(position, originator id, version, topic, state) of the log's rows from `start`."""
        if self.sqlite:
            return self._sqlite_rows(start, limit, topics)
        return [
            (n.id, n.originator_id, n.originator_version, n.topic, n.state)
            for n in self.log.recorder.select_notifications(start, limit, topics=topics)
        ]

    def _sqlite_rows(self, start: int, limit: int, topics: list[str]) -> list[tuple[Any, ...]]:
        recorder = self.log.recorder
        sql = (
            f"SELECT rowid, originator_id, originator_version, topic, state FROM {recorder.events_table_name}"
            " WHERE rowid>=?"
        )
        params: list[Any] = [start]
        if topics:
            sql += f" AND topic IN ({','.join('?' * len(topics))})"
            params += topics
        sql += " ORDER BY rowid LIMIT ?"
        params.append(limit)
        with recorder.datastore.transaction(commit=False) as c:
            cursor = getattr(c, "sqlite_cursor", None)
            if cursor is not None:  # plain tuples rather than the connection's sqlite3.Row objects
                cursor.row_factory = None
                cursor.execute(sql, params)
                rows: list[tuple[Any, ...]] = cursor.fetchall()
                return rows
            c.execute(sql, params)
            return [tuple(row) for row in c.fetchall()]

    @staticmethod
    def _class_of(topic: str) -> tuple[type, Callable[[Any], Any], int, str | None]:
        """Only Strata's own events (domain/topics.py: a row naming another module is refused before
        anything imports it), with the aggregate a creating event must name."""
        cls = event_class(topic)
        return cls, find_id_convertor(cls, UUID), getattr(cls, "class_version", 1), creates(topic)


def _upcast(cls: type, class_version: int, values: dict[str, Any]) -> None:
    """What eventsourcing's mapper does to a stored event's state before it builds the event."""
    _upcast_from(cls, values.pop("class_version", 1), class_version, values)


def _upcast_from(cls: type, stored: int, class_version: int, values: dict[str, Any]) -> None:
    """_upcast() of a state whose stored class_version was taken out of it already."""
    while stored < class_version:
        getattr(cls, f"upcast_v{stored}_v{stored + 1}")(values)
        stored += 1


def _uuid(
    text: str,
    _new: Any = object.__new__,
    _set: Any = object.__setattr__,
    _unknown: Any = SafeUUID.unknown,
    _uuid_class: type = UUID,
) -> UUID:
    """UUID(text) for a well-formed UUID string from the log, without UUID.__init__'s parsing."""
    if len(text) == 32:  # how eventsourcing's SQLite recorder stores them
        number = int(text, 16)
    elif len(text) == 36:
        number = int(text.replace("-", ""), 16)
    else:
        return UUID(text)
    value: UUID = _new(_uuid_class)
    _set(value, "int", number)
    _set(value, "is_safe", _unknown)
    return value


class Projection(ABC):
    name: ClassVar[str]
    migrations: ClassVar[Sequence[Migration]]
    tables: ClassVar[Sequence[str]]
    """Every table the migrations create, dropped by reset()."""
    digest_queries: ClassVar[Sequence[str]]
    """Ordered queries whose rows define the projection's content (see digest())."""
    count_query: ClassVar[str]
    needs_vectors: ClassVar[bool] = False
    reads: ClassVar[tuple[type, ...] | None] = None
    """The event classes apply() acts on (None: it may act on any): a replay decodes only these, and
    the position still moves past the others (handle(..., through=))."""
    deferred_indexes: ClassVar[dict[str, str]] = {}
    """Secondary indexes (name: its CREATE INDEX IF NOT EXISTS) that a replay into an empty projection
    drops and builds once at its end (bulk()): one sort instead of a b-tree insert per row. A replay
    killed before its end leaves them to the next process that applies events to the projection (a
    worker, a server, a command catching up); one that only reads never builds them (a hook must not
    wait on that), and finds the same rows without them, more slowly."""
    _unbuilt: bool = False
    _bulk: bool = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = store.FileLock(path.with_suffix(".lock"))
        self.conn = store.connect(path, vectors=self.needs_vectors)
        store.migrate(self.conn, self.name, self.migrations)
        self._unbuilt = bool(self._missing_indexes())
        self.opened()

    def opened(self) -> None:  # noqa: B027 - a hook: doing nothing is the default, not a mistake
        """Hook after the schema is current (e.g. to check the embedding model)."""

    @property
    def position(self) -> int:
        return store.position(self.conn, self.name)

    def handle(self, batch: Sequence[Positioned], through: int | None = None) -> int:
        """Apply the events of `batch` this projection has not applied yet; return how many.
        Events at or below the current position are skipped, so re-delivery is harmless. `through`:
        the batch holds every event this projection reads up to that log position (a replay that
        decodes only the events in `reads`), so the position moves there even past the last event."""
        return self._handle(batch, through, False)

    def _handle(self, batch: Sequence[Any], through: int | None, as_records: bool) -> int:
        """handle() of events (Positioned), or of records (RecordProjection.handle_records)."""
        done = self.position
        end = max(batch[-1][0] if batch else 0, through or 0)
        if end <= done:
            return 0
        if self._unbuilt and not self._bulk:
            self.build_indexes()
        pending = [item for item in batch if item[0] > done]
        prepared = self.prepare(pending) if pending else None
        with store.transaction(self.conn):
            # another process may have moved this projection while we prepared
            done = store.position(self.conn, self.name)
            if end > done:
                pending = [item for item in pending if item[0] > done]
                if pending:
                    if as_records:
                        self.apply_records(self.conn, pending)
                    else:
                        self.apply(self.conn, pending, prepared)
                store.set_position(self.conn, self.name, end)
            else:
                pending = []
        return len(pending)

    @classmethod
    def topics(cls) -> list[str] | None:
        """The log topics of `reads` (None: every event)."""
        return None if cls.reads is None else [get_topic(kind) for kind in cls.reads]

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A replay's settings while it feeds this projection large batches (see store.bulk): the
        same transactions and positions as ever, so a crash still leaves the rows of the position. Into an
        empty projection (position zero) with a rollback journal rather than the WAL (store.REPLAY_JOURNAL)."""
        fresh = self.position == 0
        with store.bulk(self.conn, fresh=fresh):
            if self.deferred_indexes and fresh:
                with store.transaction(self.conn):
                    for index in self.deferred_indexes:
                        self.conn.execute(f"DROP INDEX IF EXISTS {index}")
            self._bulk = True
            self.bulk_started()
            try:
                yield
            finally:
                self._bulk = False
                self.bulk_ended()
                self.build_indexes()

    def _missing_indexes(self) -> list[str]:
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?"
        return [name for name in self.deferred_indexes if not self.conn.execute(sql, (name,)).fetchone()]

    def build_indexes(self) -> None:
        """Build the deferred indexes that are missing (at the end of a replay, or after one was killed)."""
        missing = self._missing_indexes()
        if missing:
            with store.transaction(self.conn):
                for name in missing:
                    self.conn.execute(self.deferred_indexes[name])
        self._unbuilt = False

    def bulk_started(self) -> None:  # noqa: B027 - a hook: doing nothing is the default, not a mistake
        """Hook: a replay starts feeding large batches (e.g. keep state in memory between them)."""

    def bulk_ended(self) -> None:  # noqa: B027 - a hook: doing nothing is the default, not a mistake
        """Hook: the replay is over (forget what bulk_started kept)."""

    def prepare(self, batch: Sequence[Positioned]) -> Any:
        """Slow work done outside the transaction (embedding); its result is passed to apply()."""
        return None

    @abstractmethod
    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        """Write the rows for `batch`. Runs inside the transaction that also moves the position."""

    records: ClassVar[bool] = False
    """Whether the projection applies records (RecordProjection)."""

    def apply_records(self, conn: Connection, batch: Sequence[Record]) -> None:
        """apply() of records: a RecordProjection's work."""
        raise NotImplementedError(f"projection {self.name} applies events, not records")

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


class RecordProjection(Projection):
    """A projection whose work reads each event's class, memory id, version, time and fields only
    (Record): a replay hands it the records LogReader.records makes from the log's rows, without
    building an event (decoding is most of a replay's cost after the projections' own SQL), and the
    events a worker reads are turned into the same records first (records_of). Either way apply_records
    does the work, so the two cannot disagree."""

    records = True

    def handle_records(self, batch: Sequence[Record], through: int | None = None) -> int:
        """handle() of records."""
        return self._handle(batch, through, True)

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        self.apply_records(conn, records_of(batch))

    @abstractmethod
    def apply_records(self, conn: Connection, batch: Sequence[Record]) -> None:
        """Write the rows for `batch`. Runs inside the transaction that also moves the position."""
