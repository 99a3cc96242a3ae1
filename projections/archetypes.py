"""Archetypes as a projection (their definitions, from the log) and the classifier that picks a read
profile for `mode: "auto"` by comparing the query embedding with each archetype's centroid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from strata_recall.domain.archetype import Archetype
from strata_recall.projections.base import Positioned, Projection
from strata_recall.projections.embedder import Embedder
from strata_recall.projections.store import Connection

# Used until archetypes are defined in the log (`strata archetypes seed` writes these there).
DEFAULT_ARCHETYPES: tuple[dict[str, Any], ...] = (
    {
        "name": "debugging",
        "description": "An error, a failing test or a crash to explain and fix.",
        "examples": [
            "I'm getting an error when I run the tests",
            "the build fails with exit code 1",
            "stack trace shows a KeyError in the parser",
            "why does the server crash on startup",
            "this test is flaky and times out in CI",
        ],
        "profile": {
            "mode": "targeted",
            "limit": 10,
            "semantic_hops": 1,
            "include_problem_links": True,
            "kinds": ["problem", "solution", "failed_tactic", "fact", "change"],
        },
    },
    {
        "name": "how_to",
        "description": "How to do a task in this codebase: commands, procedures.",
        "examples": [
            "how do I run the database migrations",
            "what's the command to deploy to staging",
            "how to set up the dev environment",
            "steps to release a new version",
        ],
        "profile": {
            "mode": "targeted",
            "limit": 8,
            "semantic_hops": 1,
            "include_problem_links": True,
            "kinds": ["solution", "fact", "preference", "change"],
        },
    },
    {
        "name": "conventions",
        "description": "Preferences and conventions: style, tools, naming, process.",
        "examples": [
            "which formatter does this repo use",
            "how should commit messages look",
            "naming conventions for test files",
            "do we prefer tabs or spaces",
        ],
        "profile": {
            "mode": "targeted",
            "limit": 10,
            "semantic_hops": 0,
            "include_problem_links": False,
            "kinds": ["preference", "fact", "change"],
        },
    },
    {
        "name": "codebase_facts",
        "description": "Where things are and how the system is put together.",
        "examples": [
            "where is the config loaded",
            "which service owns the payments table",
            "what port does the API listen on",
            "what database does the app use",
        ],
        "profile": {
            "mode": "targeted",
            "limit": 10,
            "semantic_hops": 1,
            "include_problem_links": False,
            "kinds": ["fact", "change", "preference"],
        },
    },
    {
        "name": "planning",
        "description": "Designing or planning a change; broad context helps.",
        "examples": [
            "plan the refactor of the storage layer",
            "we need to add caching to the API",
            "design a new endpoint for exports",
            "what should we consider before migrating to postgres",
        ],
        "profile": {"mode": "targeted", "limit": 15, "semantic_hops": 2, "include_problem_links": True, "kinds": None},
    },
    {
        "name": "recollection",
        "description": "Recalling what happened or was said: people, dates, events.",
        "examples": [
            "when did we last change the deployment process",
            "what did Alice say about the release",
            "what happened at the meeting last week",
            "when did she move to the new city",
        ],
        "profile": {"mode": "targeted", "limit": 20, "semantic_hops": 2, "include_problem_links": True, "kinds": None},
    },
)


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE archetypes (archetype_id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " description TEXT NOT NULL, examples TEXT NOT NULL, profile TEXT NOT NULL, version INTEGER NOT NULL)"
    )


class ArchetypesProjection(Projection):
    name = "archetypes"
    migrations = (m001_create_tables,)
    tables = ("archetypes",)
    digest_queries = ("SELECT name, description, examples, profile, version FROM archetypes ORDER BY name",)
    count_query = "SELECT count(*) FROM archetypes"

    def apply(self, conn: Connection, batch: Sequence[Positioned], prepared: Any) -> None:
        for _, event in batch:
            if not isinstance(event, (Archetype.ArchetypeDefined, Archetype.ArchetypeChanged)):
                continue
            key = str(event.originator_id)
            body = (
                event.description,
                orjson.dumps(event.examples).decode(),
                orjson.dumps(event.profile, option=orjson.OPT_SORT_KEYS).decode(),
                event.originator_version,
            )
            if isinstance(event, Archetype.ArchetypeDefined):
                conn.execute("INSERT OR REPLACE INTO archetypes VALUES (?, ?, ?, ?, ?, ?)", (key, event.name, *body))
            elif isinstance(event, Archetype.ArchetypeChanged):
                conn.execute(
                    "UPDATE archetypes SET description = ?, examples = ?, profile = ?, version = ? WHERE archetype_id = ?",
                    (*body, key),
                )

    def definitions(self) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT name, description, examples, profile FROM archetypes ORDER BY name")
        return [
            {"name": n, "description": d, "examples": orjson.loads(e), "profile": orjson.loads(p)}
            for n, d, e, p in rows
        ]


@dataclass(frozen=True)
class Match:
    name: str
    similarity: float
    profile: dict[str, Any]


class ArchetypeClassifier:
    """Nearest centroid over the archetypes' example embeddings; centroids are recomputed only when
    the definitions change."""

    def __init__(self, projection: ArchetypesProjection | None, embedder: Embedder) -> None:
        self.projection = projection
        self.embedder = embedder
        self._seen = -1
        self._names: list[str] = []
        self._profiles: list[dict[str, Any]] = []
        self._centroids = np.zeros((0, embedder.dim), dtype=np.float32)

    def definitions(self) -> list[dict[str, Any]]:
        defined = self.projection.definitions() if self.projection is not None else []
        return defined or [dict(a) for a in DEFAULT_ARCHETYPES]

    def refresh(self) -> None:
        position = self.projection.position if self.projection is not None else 0
        if position == self._seen and self._names:
            return
        definitions = self.definitions()
        centroids = []
        for d in definitions:
            vectors = self.embedder.embed(d["examples"])
            centroid = vectors.mean(axis=0)
            centroids.append(centroid / (np.linalg.norm(centroid) or 1.0))
        self._names = [d["name"] for d in definitions]
        self._profiles = [d["profile"] for d in definitions]
        self._centroids = np.asarray(centroids, dtype=np.float32)
        self._seen = position

    def classify(self, query_vector: np.ndarray) -> Match:
        self.refresh()
        sims = self._centroids @ query_vector
        best = int(np.argmax(sims))
        return Match(self._names[best], float(sims[best]), self._profiles[best])
