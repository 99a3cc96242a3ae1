"""The write path's near-duplicate lookup: the existing memories of the same repo and scope nearest
to a new text, from the read path's in-memory vector index (the embedding model must be loaded:
a write never waits for it). What they mean for the write is decided by domain/duplicates.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.duplicates import SIMILAR_COSINE
from strata_recall.domain.visibility import can_see
from strata_recall.projections import store
from strata_recall.projections.vector_index import GLOBAL
from strata_recall.projections.vectors import EmbeddingCache, content_hash

if TYPE_CHECKING:
    from strata_recall.projections.recall import RecallEngine

SEARCHED = 10
"""Neighbours looked at: some may be forgotten, archived or rejected, and are skipped."""
LIVE = ("active", "pending")


@dataclass(frozen=True)
class Similar:
    memory_id: str
    kind: str
    scope: str
    status: str
    similarity: float
    text: str
    problem_ids: tuple[str, ...] = ()
    anchor_keys: frozenset[str] = frozenset()


class NearDuplicates:
    """Looks a text up among the memories one write could repeat, through the recall engine's index
    and state. The text's embedding goes into the embedding cache, where the vector projection finds
    it when the write reaches it: the model runs once per written text, not twice."""

    def __init__(self, engine: RecallEngine, cache: EmbeddingCache) -> None:
        self.engine, self.cache = engine, cache
        self._cache_lock = threading.Lock()  # one connection, shared by the request threads

    def _embedding(self, text: str) -> np.ndarray:
        """The text's vector from the cache, else from the model, then cached. The cache is only an
        optimisation: a failure to write it (a full disk) leaves the write to fail or succeed on the
        log's own terms, and the vector projection embeds the text itself."""
        embedder, key = self.engine.embedder, content_hash(text)
        with self._cache_lock:
            blob = self.cache.get_many([key], embedder.model_id).get(key)
        if blob is not None:
            return np.frombuffer(blob, dtype=np.float32)
        vector: np.ndarray = embedder.embed([text])[0].astype(np.float32)
        try:
            with self._cache_lock:
                self.cache.put_many([(key, embedder.model_id, vector.tobytes())])
        except store.Error:
            pass
        return vector

    def nearest(self, repo_id: str, scope: str, text: str, exclude: str | None = None) -> list[Similar]:
        """Live memories of `repo_id` (scope repo) or of the global pool (scope global) from
        SIMILAR_COSINE up, most similar first (the caller shows SIMILAR_SHOWN of them), among the
        SEARCHED nearest that `repo_id` may see: another repo's global proposal is neither shown nor
        takes the place of one it may see (domain/visibility.py)."""
        vector = self._embedding(text)
        partition, k = GLOBAL if scope == "global" else repo_id, SEARCHED
        while True:
            hits, rows = self.engine.neighbours(vector, partition, k)
            seen = [(m, cos) for m, cos in hits if m in rows and _sees(repo_id, rows[m])]
            if len(seen) >= SEARCHED or len(hits) < k:
                break
            k *= 4  # the nearest held another repo's proposals: look further
        found = []
        for memory_id, cos in seen[:SEARCHED]:
            row = rows[memory_id]
            if cos < SIMILAR_COSINE or memory_id == exclude or row["status"] not in LIVE:
                continue
            found.append(
                Similar(
                    memory_id,
                    row["kind"],
                    row["scope"],
                    row["status"],
                    round(float(cos), 4),
                    row["text"],
                    tuple(row["problem_ids"]),
                    frozenset(Anchor.of(a).key for a in row["anchors"]),
                )
            )
        return found


def _sees(viewer: str, row: dict[str, Any]) -> bool:
    return can_see(viewer, row["scope"], row["repo_id"], status=row["status"])
