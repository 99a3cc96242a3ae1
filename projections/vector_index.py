"""Exact cosine search over an in-memory copy of the vector projection, partitioned by repo.

sqlite-vec's exact k-NN costs ~50 ms at 100,000 vectors here (its wheel has no SIMD); a numpy
matrix product over the same vectors costs ~5 ms and is exact, so the read path searches a
per-process copy. The copy follows the projection through its change feed (`vec_feed`): a refresh
reads only the rows that changed since the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from projections.vectors import VectorProjection

GLOBAL = "\x00global"  # partition key of global memories (never a repo id: control characters are refused)


@dataclass
class _Partition:
    dim: int
    ids: list[str] = field(default_factory=list)
    slot: dict[str, int] = field(default_factory=dict)
    matrix: np.ndarray = field(init=False)
    kinds: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((16, self.dim), dtype=np.float32)

    def upsert(self, memory_id: str, vector: np.ndarray, kind: str, status: str) -> None:
        at = self.slot.get(memory_id)
        if at is None:
            at = len(self.ids)
            if at == len(self.matrix):
                grown = np.zeros((2 * len(self.matrix), self.dim), dtype=np.float32)
                grown[:at] = self.matrix
                self.matrix = grown
            self.ids.append(memory_id)
            self.kinds.append(kind)
            self.statuses.append(status)
            self.slot[memory_id] = at
        self.matrix[at] = vector
        self.kinds[at] = kind
        self.statuses[at] = status

    def top(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        return self.top_many(query[None, :], k)[0]

    def top_many(self, queries: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """The k best for several queries with one pass over the matrix (it is memory-bound)."""
        n = len(self.ids)
        if n == 0:
            return [[] for _ in queries]
        sims = self.matrix[:n] @ queries.T  # (n, q)
        k = min(k, n)
        out = []
        ids = self.ids
        for column in sims.T:
            best = np.argpartition(-column, k - 1)[:k] if k < n else np.arange(n)
            best = best[np.argsort(-column[best])]
            out.append(list(zip([ids[i] for i in best.tolist()], column[best].tolist(), strict=True)))
        return out


class VectorIndex:
    def __init__(self, projection: VectorProjection) -> None:
        self.projection = projection
        self.dim = projection.embedder.dim
        self.partitions: dict[str, _Partition] = {}
        self.location: dict[str, tuple[str, int]] = {}
        self.seq = -1

    def refresh(self) -> None:
        conn = self.projection.conn
        top = conn.execute("SELECT coalesce(max(seq), 0) FROM vec_feed").fetchone()[0]
        if self.seq < 0 or top < self.seq:  # first use, or the projection was rebuilt
            self.partitions.clear()
            rows = conn.execute("SELECT memory_id, embedding, repo_id, scope, kind, status FROM vec_memories")
            self._load(rows)
        elif top > self.seq:
            changed = [r[0] for r in conn.execute("SELECT DISTINCT memory_id FROM vec_feed WHERE seq > ?", (self.seq,))]
            for i in range(0, len(changed), 500):
                chunk = changed[i : i + 500]
                self._load(conn.execute(
                    "SELECT memory_id, embedding, repo_id, scope, kind, status FROM vec_memories"
                    f" WHERE memory_id IN ({','.join('?' * len(chunk))})", chunk))
        self.seq = top

    def _load(self, rows: Sequence[tuple]) -> None:
        for memory_id, blob, repo_id, scope, kind, status in rows:
            key = GLOBAL if scope == "global" else repo_id
            partition = self.partitions.get(key)
            if partition is None:
                partition = self.partitions[key] = _Partition(self.dim)
            partition.upsert(memory_id, np.frombuffer(blob, dtype=np.float32), kind, status)

    def search(self, query: np.ndarray, repo_id: str, *, include_global: bool, k: int) -> list[tuple[str, float]]:
        """The k nearest memories visible from `repo_id` (any status), best first, with cosine."""
        hits: list[tuple[str, float]] = []
        for key in (repo_id, GLOBAL) if include_global else (repo_id,):
            partition = self.partitions.get(key)
            if partition is not None:
                hits += partition.top(query, k)
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def search_many(self, queries: np.ndarray, repo_id: str, *, include_global: bool, k: int) -> list[list[tuple[str, float]]]:
        results: list[list[tuple[str, float]]] = [[] for _ in queries]
        for key in (repo_id, GLOBAL) if include_global else (repo_id,):
            partition = self.partitions.get(key)
            if partition is not None:
                for hits, more in zip(results, partition.top_many(queries, k), strict=True):
                    hits += more
        for hits in results:
            hits.sort(key=lambda h: -h[1])
            del hits[k:]
        return results

    def vector(self, memory_id: str, repo_id: str) -> np.ndarray | None:
        for key in (repo_id, GLOBAL):
            partition = self.partitions.get(key)
            if partition is not None and memory_id in partition.slot:
                return partition.matrix[partition.slot[memory_id]]
        return None

    def size(self) -> int:
        return sum(len(p.ids) for p in self.partitions.values())
