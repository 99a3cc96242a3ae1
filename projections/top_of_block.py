"""Memory state at one log position for the read path: the compacted snapshot plus the tail of events
after its block height, folded incrementally (each read folds only what arrived since the last).

In a serving process the tail comes from the events the projection runner read last (`RecentEvents`),
and from the log only for what those do not cover (events read before the process started, or long
ago): a read then never waits on the log for events its node has already applied. When the log cannot
be read (a PostgreSQL outage: the serving process bounds the wait, domain/persistence.py), the fold
stops where it got to and the read answers at that position, from the snapshot and the tail folded so
far: a read node keeps answering from what it has, and the answer says which position it reflects
(and, on PostgreSQL, that the log is unreachable)."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import orjson
import structlog

from strata_recall.domain.application import MemoryLog
from strata_recall.domain.memory import MEMORY_EVENTS
from strata_recall.domain.persistence import LOG_ERRORS
from strata_recall.projections import store
from strata_recall.projections.base import LogReader, Positioned
from strata_recall.projections.snapshot import MemoryState, SnapshotProjection, fold_states
from strata_recall.projections.snapshot_queries import COLUMNS, decoded

log = structlog.get_logger("strata.read")
_SELECT_ROWS = f"SELECT {', '.join(COLUMNS)} FROM snapshot WHERE memory_id IN ({{marks}})"


class RecentEvents:
    """The memory events of the log positions the projection runner read last, for the read path's
    tail fold (see the module notes). The runner adds each batch it reads (`add`); a reader takes a
    range of positions if every position in it is covered (`take`). Covered is (lo, hi]: a batch
    read from position s that ends at p covers [s, p] (the log's positions become visible in order;
    gaps hold no event). A batch that does not join the covered range starts it again. At most
    `keep` events are kept (the oldest go first): a tail longer than that reads its start from the log."""

    def __init__(self, keep: int = 5000) -> None:
        self.keep = keep
        self.lo = self.hi = 0
        self._positions: deque[int] = deque()
        self._events: deque[Any] = deque()
        self._lock = threading.Lock()

    def add(self, start: int, batch: list[Positioned]) -> None:
        if not batch:
            return
        last = batch[-1][0]
        kept = [(p, e) for p, e in batch if isinstance(e, MEMORY_EVENTS)]
        with self._lock:
            if self.lo < start <= self.hi + 1:  # joins (or overlaps) the covered range
                kept = [(p, e) for p, e in kept if p > self.hi]
                self.hi = max(self.hi, last)
            else:
                self._positions.clear()
                self._events.clear()
                self.lo, self.hi = start - 1, last
            for p, e in kept:
                self._positions.append(p)
                self._events.append(e)
            while len(self._events) > self.keep:
                self.lo = self._positions.popleft()
                self._events.popleft()

    def take(self, after: int, upto: int) -> list[Positioned] | None:
        """The memory events at positions in (after, upto], or None when that range is not covered."""
        with self._lock:
            if not self.lo <= after or upto > self.hi:
                return None
            out = []
            for p, e in zip(reversed(self._positions), reversed(self._events), strict=True):  # a tail is short
                if p <= after:
                    break
                if p <= upto:
                    out.append((p, e))
            out.reverse()
            return out

    def start(self) -> int:
        """The covered range begins after this position."""
        return self.lo


class TopOfBlock:
    CACHED_ROWS = 50_000
    """Snapshot rows kept between reads. Rows at one block height never change, so the cache holds
    until the height moves (a compaction), then starts again; it is also emptied when full. They are
    kept as the table gives them (tuples of strings and numbers, which the garbage collector does not
    track) and decoded on each use: kept decoded, their lists and dicts made every full collection
    walk ~250,000 objects, 140 ms pauses three times per 300 reads at 100,000 memories (the p99)."""

    def __init__(self, snapshot: SnapshotProjection, memory_log: MemoryLog, recent: RecentEvents | None = None) -> None:
        self.snapshot = snapshot
        self.log = memory_log
        self.recent = recent
        self.height = -1
        self.upto = -1
        self.tail: dict[str, MemoryState] = {}
        self._rows: dict[str, dict[str, Any]] = {}  # decoded rows of tail memories, until touched again
        self._cache: dict[str, dict[str, Any]] = {}  # snapshot rows at self.height, decoded (nested values read-only)
        self.reader = LogReader(memory_log)

    def advance(self, position: int) -> int:
        """Fold the tail up to `position` (a compaction since the last call restarts the tail); returns
        the position the state now answers for: `position`, or less when the log could not be read (see
        the module notes)."""
        height = self.snapshot.position
        if height != self.height:
            self.height, self.upto, self.tail, self._rows, self._cache = height, height, {}, {}, {}
        while self.upto < position:
            batch = self.recent.take(self.upto, position) if self.recent is not None else None
            if batch is not None:
                read_to = position
            else:
                # from the log, up to where the recent events begin (if they begin ahead)
                ahead = self.recent.start() if self.recent is not None else 0
                read_to = min(position, self.upto + 5000, ahead if ahead > self.upto else position)
                try:
                    read = self.reader.read(self.upto + 1, read_to - self.upto)
                except LOG_ERRORS as exc:
                    log.warning(
                        "tail_unreadable", position=self.upto, wanted=position, error=" ".join(str(exc).split())[:300]
                    )
                    break
                batch = [(p, e) for p, e in read if isinstance(e, MEMORY_EVENTS) and p <= read_to]
            if batch:
                missing = {str(e.originator_id) for _, e in batch} - self.tail.keys()
                self.tail.update(self.snapshot.load_states(missing))
                for key in fold_states(self.tail, [e for _, e in batch]):
                    self._rows.pop(key, None)
            self.upto = read_to
        return position if self.upto >= position else self.upto

    def rows(self, memory_ids: set[str]) -> dict[str, dict[str, Any]]:
        """Current rows of these memories (unknown ids are absent), JSON columns decoded. Each call
        returns rows of its own (a reader may annotate them); nested values are shared, read-only."""
        out: dict[str, dict[str, Any]] = {}
        rest = []
        tail, tail_rows, cache = self.tail, self._rows, self._cache
        for m in memory_ids:
            if m in tail:
                row = tail_rows.get(m)
                if row is None:
                    row = tail_rows[m] = decoded(tail[m].row(), orjson.loads)
                out[m] = dict(row)
            else:
                row = cache.get(m)
                if row is None:
                    rest.append(m)
                else:
                    out[m] = dict(row)
        if len(cache) + len(rest) > self.CACHED_ROWS:
            cache.clear()
        for values in store.select_in(self.snapshot.conn, _SELECT_ROWS, rest):
            row = cache[values[0]] = decoded(dict(zip(COLUMNS, values, strict=True)), orjson.loads)
            out[values[0]] = dict(row)
        return out
