"""Cosine search over an in-memory copy of the vector projection, partitioned by repo.

sqlite-vec's exact k-NN costs ~50 ms at 100,000 vectors here (its wheel has no SIMD); numpy over
the same vectors in memory is exact and ~10x faster, so the read path searches a per-process copy.
The copy follows the projection through its change feed (`vec_feed`): a refresh reads only the
rows that changed since the last one.

A large partition is searched in two stages: a pass over its rows projected onto the leading
principal components of the stored vectors (REDUCED_DIM of 384: a third of the memory to stream,
and small enough to stay in cache), then an exact re-ranking of a pool of the best of them
(POOL_FACTOR times the number wanted). Each read streams a repo's vectors several times (the query,
then every semantic hop), and the full-width pass was memory-bound: 0.6-0.8 ms per pass over 13,000
vectors on this machine under load, 0.11 ms for the projected one. ops/bench_read.py reports the
recall against exact search (1.000 for the query's 50 best, and for the hops' neighbours, on the
realistic workload); partitions below EXACT_BELOW rows are searched exactly. The first stage runs
BLOCK rows at a time, for all the queries of a search at once (a semantic hop's parents): see
_products.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from strata_recall.projections import store
from strata_recall.projections.vectors import VectorProjection

GLOBAL = "\x00global"  # partition key of global memories (never a repo id: control characters are refused)
REDUCED_DIM = 128
EXACT_BELOW = 2048
POOL_FACTOR, POOL_MIN = 5, 64
BLOCK = 1024
"""Rows of the first stage multiplied at a time (128 dims: 512 KiB, in a core's cache)."""
FIT_SAMPLE = 8192
"""Vectors sampled (evenly over the partitions' rows) to fit the projection."""
MIN_CAPTURED = 0.85
"""The share of the vectors' variance the axes must hold for the first stage to be trusted (MiniLM
on the realistic workload: 0.92). Vectors spread evenly over every direction (nothing like
sentence embeddings) fail it, and every partition is then searched exactly."""


@dataclass(frozen=True)
class Basis:
    """The leading principal components of the stored vectors: a row m is kept as (m - mean) @ axes,
    a query q is projected as q @ axes; their product ranks rows as m @ q does, approximately
    (the mean's share, mean @ q, is the same for every row)."""

    mean: np.ndarray
    axes: np.ndarray  # (dim, REDUCED_DIM)
    fitted_on: int  # vectors in the index when fitted
    captured: float  # share of the sample's variance along the axes

    @classmethod
    def fit(cls, sample: np.ndarray, fitted_on: int) -> Basis:
        data = sample.astype(np.float64)
        mean = data.mean(axis=0)
        centred = data - mean
        values, vectors = np.linalg.eigh(centred.T @ centred)  # ascending eigenvalues
        axes = vectors[:, ::-1][:, :REDUCED_DIM]
        captured = float(values[::-1][:REDUCED_DIM].sum() / max(values.sum(), 1e-12))
        return cls(mean.astype(np.float32), np.ascontiguousarray(axes, dtype=np.float32), fitted_on, captured)

    def rows(self, matrix: np.ndarray) -> np.ndarray:
        reduced: np.ndarray = (matrix - self.mean) @ self.axes
        return reduced


@dataclass
class _Partition:
    dim: int
    ids: list[str] = field(default_factory=list)
    slot: dict[str, int] = field(default_factory=dict)
    matrix: np.ndarray = field(init=False)
    reduced: np.ndarray | None = None  # rows projected on the basis, when there is one
    kinds: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.matrix = np.zeros((16, self.dim), dtype=np.float32)

    def upsert(self, memory_id: str, vector: np.ndarray, kind: str, status: str, basis: Basis | None) -> None:
        at = self.slot.get(memory_id)
        if at is None:
            at = len(self.ids)
            if at == len(self.matrix):
                grown = np.zeros((2 * len(self.matrix), self.dim), dtype=np.float32)
                grown[:at] = self.matrix
                self.matrix = grown
                if self.reduced is not None:
                    reduced = np.zeros((len(grown), self.reduced.shape[1]), dtype=np.float32)
                    reduced[:at] = self.reduced[:at]
                    self.reduced = reduced
            self.ids.append(memory_id)
            self.kinds.append(kind)
            self.statuses.append(status)
            self.slot[memory_id] = at
        self.matrix[at] = vector
        if basis is not None and self.reduced is not None:
            self.reduced[at] = basis.rows(vector[None, :])[0]
        self.kinds[at] = kind
        self.statuses[at] = status

    def project(self, basis: Basis | None) -> None:
        self.reduced = None if basis is None else np.ascontiguousarray(basis.rows(self.matrix))

    def top(self, query: np.ndarray, k: int, basis: Basis | None = None) -> list[tuple[str, float]]:
        return self.top_many(query[None, :], k, basis)[0]

    def top_many(self, queries: np.ndarray, k: int, basis: Basis | None = None) -> list[list[tuple[str, float]]]:
        """The k best for each of several queries, with their exact cosines, best first."""
        n = len(self.ids)
        if n == 0:
            return [[] for _ in queries]
        matrix = self.matrix[:n]
        k = min(k, n)
        pool = max(POOL_MIN, POOL_FACTOR * k)
        staged = basis is not None and self.reduced is not None and n >= EXACT_BELOW and pool < n
        rough = _products(self.reduced[:n], queries @ basis.axes) if staged else None  # type: ignore[index, union-attr]
        out = []
        ids = self.ids
        for i, query in enumerate(queries):
            if rough is not None:
                rows = np.argpartition(-rough[i], pool - 1)[:pool]
                column = matrix[rows] @ query
            else:
                rows = None
                column = matrix @ query
            best = np.argpartition(-column, k - 1)[:k] if k < len(column) else np.arange(len(column))
            best = best[np.argsort(-column[best])]
            cosines = column[best].tolist()
            if rows is not None:
                best = rows[best]
            out.append(list(zip([ids[i] for i in best.tolist()], cosines, strict=True)))
        return out


def _products(rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """rows @ queries.T, transposed: one row of products per query. Computed BLOCK rows at a time, so that
    each product is small enough for OpenBLAS to run it on the calling thread, and every query is served
    by one read of the rows. On 55,216 MiniLM vectors of the realistic workload in one partition, under
    this machine's usual load, against main's sgemv over the whole matrix (which OpenBLAS spreads over its
    threads, and which then wait on the memory and on each other): the query's search 3.7-5.4 ms CPU
    against 5.8-9.5, a hop's three parents 5.3-8.4 ms against 15.5-24.2, the same ids and cosines."""
    products = np.empty((len(rows), len(queries)), dtype=np.float32)
    columns = np.ascontiguousarray(queries.T, dtype=np.float32)
    for start in range(0, len(rows), BLOCK):
        np.dot(rows[start : start + BLOCK], columns, out=products[start : start + BLOCK])
    return np.ascontiguousarray(products.T)


class VectorIndex:
    def __init__(self, projection: VectorProjection) -> None:
        self.projection: VectorProjection | None = projection
        self.dim = projection.embedder.dim
        self.partitions: dict[str, _Partition] = {}
        self.basis: Basis | None = None
        self.fitted_on = 0  # vectors in the index at the last fit (trusted or not)
        self.seq = -1

    @classmethod
    def of_rows(cls, dim: int, rows: Sequence[tuple[Any, ...]]) -> VectorIndex:
        """An index of these rows alone — (memory_id, embedding bytes, repo_id, scope, kind, status),
        in log order — loaded and fitted as a first refresh() of a projection holding exactly them
        would; it follows nothing (refresh() does nothing). A read model of the past: workers/as_of.py."""
        index = cls.__new__(cls)
        index.projection, index.dim, index.partitions = None, dim, {}
        index.basis, index.fitted_on, index.seq = None, 0, 0
        index._load(rows)
        index._fit()
        return index

    def refresh(self) -> None:
        if self.projection is None:  # of_rows(): fixed rows
            return
        conn = self.projection.conn
        top = conn.execute("SELECT coalesce(max(seq), 0) FROM vec_feed").fetchone()[0]
        if self.seq < 0 or top < self.seq:  # first use, or the projection was rebuilt
            self.partitions.clear()
            self.basis, self.fitted_on = None, 0
            rows = conn.execute("SELECT memory_id, embedding, repo_id, scope, kind, status FROM vec_memories")
            self._load(rows)
        elif top > self.seq:
            changed = [r[0] for r in conn.execute("SELECT DISTINCT memory_id FROM vec_feed WHERE seq > ?", (self.seq,))]
            self._load(
                store.select_in(
                    conn,
                    "SELECT memory_id, embedding, repo_id, scope, kind, status FROM vec_memories"
                    " WHERE memory_id IN ({marks})",
                    changed,
                )
            )
        self.seq = top
        self._fit()

    def _load(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for memory_id, blob, repo_id, scope, kind, status in rows:
            key = GLOBAL if scope == "global" else repo_id
            partition = self.partitions.get(key)
            if partition is None:
                partition = self.partitions[key] = _Partition(self.dim)
                partition.project(self.basis)
            partition.upsert(memory_id, np.frombuffer(blob, dtype=np.float32), kind, status, self.basis)

    def _fit(self) -> None:
        """(Re)fit the basis once enough vectors are in, and again whenever their number doubles,
        so it follows what the store holds; every partition is projected anew."""
        total = self.size()
        if self.dim <= REDUCED_DIM or total < EXACT_BELOW or total < 2 * self.fitted_on:
            return
        stride = max(1, total // FIT_SAMPLE)
        sample = np.concatenate([p.matrix[: len(p.ids)][::stride] for p in self.partitions.values()])
        basis = Basis.fit(sample, total)
        self.basis = basis if basis.captured >= MIN_CAPTURED else None
        self.fitted_on = total
        for partition in self.partitions.values():
            partition.project(self.basis)

    def search(self, query: np.ndarray, repo_id: str, *, include_global: bool, k: int) -> list[tuple[str, float]]:
        """The k nearest memories visible from `repo_id` (any status), best first, with cosine."""
        hits: list[tuple[str, float]] = []
        for key in (repo_id, GLOBAL) if include_global else (repo_id,):
            partition = self.partitions.get(key)
            if partition is not None:
                hits += partition.top(query, k, self.basis)
        hits.sort(key=lambda h: -h[1])
        return hits[:k]

    def search_many(
        self, queries: np.ndarray, repo_id: str, *, include_global: bool, k: int
    ) -> list[list[tuple[str, float]]]:
        results: list[list[tuple[str, float]]] = [[] for _ in queries]
        for key in (repo_id, GLOBAL) if include_global else (repo_id,):
            partition = self.partitions.get(key)
            if partition is not None:
                for hits, more in zip(results, partition.top_many(queries, k, self.basis), strict=True):
                    hits += more
        for hits in results:
            hits.sort(key=lambda h: -h[1])
            del hits[k:]
        return results

    def vector(self, memory_id: str, repo_id: str) -> np.ndarray | None:
        for key in (repo_id, GLOBAL):
            partition = self.partitions.get(key)
            if partition is not None and memory_id in partition.slot:
                row: np.ndarray = partition.matrix[partition.slot[memory_id]]
                return row
        return None

    def size(self) -> int:
        return sum(len(p.ids) for p in self.partitions.values())
