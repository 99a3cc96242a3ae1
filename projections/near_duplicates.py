"""The write path's near-duplicate lookup: the existing memories of the same repo and scope nearest
to a new text, from the read path's in-memory vector index (the embedding model must be loaded:
a write never waits for it). What they mean for the write is decided by domain/duplicates.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from strata_recall.domain.anchors import Anchor
from strata_recall.domain.duplicates import SIMILAR_COSINE
from strata_recall.projections.vector_index import GLOBAL

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
    and state (and under its lock: they are one reader's)."""

    def __init__(self, engine: RecallEngine) -> None:
        self.engine = engine

    def nearest(self, repo_id: str, scope: str, text: str, exclude: str | None = None) -> list[Similar]:
        """Live memories of `repo_id` (scope repo) or of the global pool (scope global) from
        SIMILAR_COSINE up, most similar first (the caller shows SIMILAR_SHOWN of them)."""
        engine = self.engine
        vector = engine.embedder.embed_query(text)
        with engine.lock:
            engine.state.advance(engine.positions())
            engine.index.refresh()
            partition = GLOBAL if scope == "global" else repo_id
            hits = [(m, cos) for m, cos in engine.index.search(vector, partition, include_global=False, k=SEARCHED)
                    if cos >= SIMILAR_COSINE and m != exclude]
            rows = engine.state.rows({m for m, _ in hits})
        found = []
        for memory_id, cos in hits:
            row = rows.get(memory_id)
            if row is None or row["status"] not in LIVE or row["scope"] != scope:
                continue
            if scope == "repo" and row["repo_id"] != repo_id:
                continue
            found.append(Similar(memory_id, row["kind"], row["scope"], row["status"], round(float(cos), 4),
                                 row["text"], tuple(row["problem_ids"]),
                                 frozenset(Anchor.of(a).key for a in row["anchors"])))
        return found
