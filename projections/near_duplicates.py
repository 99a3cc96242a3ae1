"""The write path's near-duplicate lookup: the existing memories of the same repo and scope nearest
to a new text, from the read path's in-memory vector index (the embedding model must be loaded:
a write never waits for it). What they mean for the write is decided by domain/duplicates.py."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.duplicates import SIMILAR_COSINE
from strata_recall.projections.vector_index import GLOBAL
from strata_recall.projections.vectors import EmbeddingCache, vectors_for

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

    def nearest(self, repo_id: str, scope: str, text: str, exclude: str | None = None) -> list[Similar]:
        """Live memories of `repo_id` (scope repo) or of the global pool (scope global) from
        SIMILAR_COSINE up, most similar first (the caller shows SIMILAR_SHOWN of them)."""
        with self._cache_lock:
            vectors, _ = vectors_for([text], self.engine.embedder, self.cache)
        vector = np.frombuffer(vectors[text], dtype=np.float32)
        hits, rows = self.engine.neighbours(vector, GLOBAL if scope == "global" else repo_id, SEARCHED)
        found = []
        for memory_id, cos in hits:
            row = rows.get(memory_id)
            if cos < SIMILAR_COSINE or memory_id == exclude or row is None or row["status"] not in LIVE:
                continue
            found.append(Similar(memory_id, row["kind"], row["scope"], row["status"], round(float(cos), 4),
                                 row["text"], tuple(row["problem_ids"]),
                                 frozenset(Anchor.of(a).key for a in row["anchors"])))
        return found
