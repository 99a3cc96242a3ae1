"""Memory state at one log position for the read path: the compacted snapshot plus the tail of events
after its block height, folded incrementally (each read folds only what arrived since the last)."""

from __future__ import annotations

from typing import Any

import orjson

from domain.application import MemoryLog
from domain.memory import MEMORY_EVENTS
from projections.base import LogReader
from projections.snapshot import COLUMNS, MemoryState, SnapshotProjection, fold_states

_JSON_COLUMNS = ("utility_by_problem", "problem_ids", "related_ids", "change_chain", "evidence_refs")


class TopOfBlock:
    def __init__(self, snapshot: SnapshotProjection, memory_log: MemoryLog) -> None:
        self.snapshot = snapshot
        self.log = memory_log
        self.height = -1
        self.upto = -1
        self.tail: dict[str, MemoryState] = {}
        self._rows: dict[str, dict[str, Any]] = {}  # rows of tail memories, until touched again
        self.reader = LogReader(memory_log)

    def advance(self, position: int) -> None:
        """Fold the tail up to `position` (a compaction since the last call restarts the tail)."""
        height = self.snapshot.position
        if height != self.height:
            self.height, self.upto, self.tail, self._rows = height, height, {}, {}
        while self.upto < position:
            batch = [(p, e) for p, e in self.reader.read(self.upto + 1, min(5000, position - self.upto))
                     if isinstance(e, MEMORY_EVENTS)]
            read_to = min(position, self.upto + 5000)
            if batch:
                missing = {str(e.originator_id) for _, e in batch} - self.tail.keys()
                self.tail.update(self.snapshot.load_states(missing))
                for key in fold_states(self.tail, [e for _, e in batch]):
                    self._rows.pop(key, None)
            self.upto = read_to

    def rows(self, memory_ids: set[str]) -> dict[str, Row]:
        """Current rows of these memories (unknown ids are absent)."""
        out = {}
        for m in memory_ids:
            if m in self.tail:
                row = self._rows.get(m)
                if row is None:
                    row = self._rows[m] = self.tail[m].row()
                out[m] = Row(row)
        rest = [m for m in memory_ids if m not in out]
        for i in range(0, len(rest), 500):
            chunk = rest[i : i + 500]
            sql = f"SELECT {', '.join(COLUMNS)} FROM snapshot WHERE memory_id IN ({','.join('?' * len(chunk))})"
            for values in self.snapshot.conn.execute(sql, chunk):
                out[values[0]] = Row(zip(COLUMNS, values, strict=True))
        return out


class Row(dict):
    """A snapshot row whose JSON columns are decoded on first access (most rows never need them)."""

    def __getitem__(self, key: str) -> Any:
        value = super().__getitem__(key)
        if key in _JSON_COLUMNS and isinstance(value, str):
            value = orjson.loads(value)
            super().__setitem__(key, value)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default


