"""Memory state at one log position for the read path: the compacted snapshot plus the tail of events
after its block height, folded incrementally (each read folds only what arrived since the last)."""

from __future__ import annotations

from typing import Any

import orjson

from domain.application import MemoryLog
from domain.memory import MEMORY_EVENTS, Memory
from projections.snapshot import COLUMNS, SnapshotProjection, fold, row_of

_JSON_COLUMNS = ("utility_by_problem", "problem_ids", "related_ids", "change_chain", "evidence_refs")


class TopOfBlock:
    def __init__(self, snapshot: SnapshotProjection, memory_log: MemoryLog) -> None:
        self.snapshot = snapshot
        self.log = memory_log
        self.height = -1
        self.upto = -1
        self.tail: dict[str, Memory] = {}

    def advance(self, position: int) -> None:
        """Fold the tail up to `position` (a compaction since the last call restarts the tail)."""
        height = self.snapshot.position
        if height != self.height:
            self.height, self.upto, self.tail = height, height, {}
        while self.upto < position:
            batch = [(p, e) for p, e in self.log.read_log(self.upto + 1, min(5000, position - self.upto))
                     if isinstance(e, MEMORY_EVENTS)]
            read_to = min(position, self.upto + 5000)
            if batch:
                missing = {str(e.originator_id) for _, e in batch} - self.tail.keys()
                self.tail.update(self.snapshot.load(missing))
                fold(self.tail, [e for _, e in batch])
            self.upto = read_to

    def rows(self, memory_ids: set[str]) -> dict[str, dict[str, Any]]:
        """Current rows of these memories (unknown ids are absent)."""
        out = {m: row_of(self.tail[m]) for m in memory_ids if m in self.tail}
        rest = [m for m in memory_ids if m not in out]
        for i in range(0, len(rest), 500):
            chunk = rest[i : i + 500]
            sql = f"SELECT {', '.join(COLUMNS)} FROM snapshot WHERE memory_id IN ({','.join('?' * len(chunk))})"
            for values in self.snapshot.conn.execute(sql, chunk):
                row = dict(zip(COLUMNS, values, strict=True))
                for key in _JSON_COLUMNS:
                    row[key] = orjson.loads(row[key])
                out[row["memory_id"]] = row
        for m in memory_ids & self.tail.keys():
            for key in _JSON_COLUMNS:
                out[m][key] = orjson.loads(out[m][key])
        return out


