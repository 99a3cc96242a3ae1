"""The read ledger of this node: what each read returned (every memory id, the solutions and failed
tactics nested in its cases included, so a utility update or feedback that cites a read id credits
only memories that read really returned), which memories each read's session has credited
(so one session can move only a bounded number of memories) and how often each archetype matched.

Node-local on purpose: reads are queries, not facts about the world, so they stay out of the log. A
query is free text an agent typed: it is redacted (domain/sanitise.py) before it reaches the file.

A lifecycle hook that injects memories into an agent's context on its own (interface/agents/hooks.py) is a
read too: over HTTP the server's read records it; from a local store the hook records an injection
itself, with exactly the memories it showed and the moment as its mode (`hook:prompt`, `hook:edit`,
`hook:failure`), so feedback may cite it and the stop hook names it until it is rated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from strata_recall.projections import store

HOOK_MODE_PREFIX = "hook:"
"""The mode of a read a lifecycle hook recorded (an injection), followed by its moment."""
IN_CHUNK = 500
"""Read ids bound per `IN (...)` list (SQLite's default limit on a statement's parameters is 999)."""


@dataclass(frozen=True, slots=True)
class Served:
    """A read as the ledger keeps it: when it was served (a time.time()) and every memory id it returned."""

    created_at: float
    memory_ids: tuple[str, ...]


class ReadLedger:
    def __init__(self, path: Path) -> None:
        self.conn = store.connect(path)
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS reads (read_id TEXT PRIMARY KEY, repo_id TEXT NOT NULL, query TEXT NOT NULL,"
            " mode TEXT NOT NULL, archetype TEXT, position INTEGER NOT NULL, created_at REAL NOT NULL,"
            " memory_ids TEXT NOT NULL)"
        )
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS credits (read_id TEXT NOT NULL, memory_id TEXT NOT NULL,"
            " created_at REAL NOT NULL, PRIMARY KEY (read_id, memory_id))"
        )
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS archetype_stats (name TEXT PRIMARY KEY, matches INTEGER NOT NULL,"
            " similarity_sum REAL NOT NULL)"
        )

    def record(
        self,
        read_id: str,
        repo_id: str,
        query: str,
        mode: str,
        archetype: str | None,
        position: int,
        memory_ids: list[str],
    ) -> None:
        # imported here: the lifecycle hooks open the ledger only to look reads up, and must start fast
        from strata_recall.domain.sanitise import sanitise

        with store.transaction(self.conn):
            self.conn.execute(
                "INSERT INTO reads VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    read_id,
                    repo_id,
                    sanitise(query).text,
                    mode,
                    archetype,
                    position,
                    time.time(),
                    orjson.dumps(memory_ids).decode(),
                ),
            )

    def record_injection(
        self, read_id: str, repo_id: str, query: str, moment: str, position: int, memory_ids: list[str]
    ) -> None:
        """A hook's injection of `memory_ids` at a moment of a session (prompt, edit, failure)."""
        self.record(read_id, repo_id, query, f"{HOOK_MODE_PREFIX}{moment}", None, position, memory_ids)

    def returned(self, read_id: str, repo_id: str) -> list[str] | None:
        """The memory ids a read of `repo_id` returned, nested ones included; None if no such read (or
        another repo's)."""
        row = self.conn.execute(
            "SELECT memory_ids FROM reads WHERE read_id = ? AND repo_id = ?", (read_id, repo_id)
        ).fetchone()
        return orjson.loads(row[0]) if row else None

    def recent(self, repo_id: str, limit: int) -> list[dict[str, Any]]:
        """The latest `limit` reads of `repo_id`, newest first (the inspector's sessions)."""
        rows = self.conn.execute(
            "SELECT read_id, query, mode, position, created_at, memory_ids FROM reads WHERE repo_id = ?"
            " ORDER BY created_at DESC LIMIT ?",
            (repo_id, limit),
        )
        return [
            {"read_id": r, "query": q, "mode": m, "position": p, "at": at, "memory_ids": orjson.loads(ids)}
            for r, q, m, p, at, ids in rows
        ]

    def uncited_since(self, repo_id: str, since: float) -> list[str]:
        """The reads of `repo_id` served since `since` (a time.time()) that no feedback or cited update has
        credited yet, oldest first: what a session's end-of-work reminder asks the agent to rate."""
        rows = self.conn.execute(
            "SELECT read_id FROM reads WHERE repo_id = ? AND created_at >= ?"
            " AND NOT EXISTS (SELECT 1 FROM credits WHERE credits.read_id = reads.read_id) ORDER BY created_at",
            (repo_id, since),
        )
        return [row[0] for row in rows]

    def prune(self, before: float) -> int:
        """Forget reads recorded before `before` (a time.time()) and the credits given under them:
        they can no longer be cited. Returns how many reads were forgotten."""
        with store.transaction(self.conn):
            forgotten: int = self.conn.execute("DELETE FROM reads WHERE created_at < ?", (before,)).rowcount
            if forgotten:
                self.conn.execute(
                    "DELETE FROM credits WHERE NOT EXISTS (SELECT 1 FROM reads WHERE reads.read_id = credits.read_id)"
                )
        return forgotten

    def served(self, repo_id: str, read_ids: list[str]) -> dict[str, Served]:
        """The reads of `repo_id` among `read_ids`, by id (unknown ones and other repos' are absent)."""
        out: dict[str, Served] = {}
        for i in range(0, len(read_ids), IN_CHUNK):
            chunk = read_ids[i : i + IN_CHUNK]
            rows = self.conn.execute(
                "SELECT read_id, created_at, memory_ids FROM reads WHERE repo_id = ?"
                f" AND read_id IN ({','.join('?' * len(chunk))})",
                [repo_id, *chunk],
            )
            for read_id, created_at, memory_ids in rows:
                out[read_id] = Served(float(created_at), tuple(orjson.loads(memory_ids)))
        return out

    def rated(self, read_ids: list[str]) -> set[str]:
        """Those of `read_ids` under which feedback has credited any memory (a read is rated once)."""
        out: set[str] = set()
        for i in range(0, len(read_ids), IN_CHUNK):
            chunk = read_ids[i : i + IN_CHUNK]
            rows = self.conn.execute(
                f"SELECT DISTINCT read_id FROM credits WHERE read_id IN ({','.join('?' * len(chunk))})", chunk
            )
            out.update(row[0] for row in rows)
        return out

    def credited(self, read_ids: list[str]) -> set[str]:
        """The memories already credited under any of these reads (one session's reads)."""
        marks = ",".join("?" * len(read_ids))
        rows = self.conn.execute(f"SELECT DISTINCT memory_id FROM credits WHERE read_id IN ({marks})", read_ids)
        return {row[0] for row in rows}

    def credit(self, pairs: list[tuple[str, str]]) -> None:
        """Remember (read_id, memory_id) credits; crediting the same pair again is harmless."""
        now = time.time()
        with store.transaction(self.conn):
            self.conn.executemany("INSERT OR IGNORE INTO credits VALUES (?, ?, ?)", [(r, m, now) for r, m in pairs])

    def matched(self, name: str, similarity: float) -> None:
        with store.transaction(self.conn):
            self.conn.execute(
                "INSERT INTO archetype_stats VALUES (?, 1, ?) ON CONFLICT(name) DO UPDATE SET"
                " matches = matches + 1, similarity_sum = similarity_sum + excluded.similarity_sum",
                (name, similarity),
            )

    def archetype_stats(self) -> dict[str, dict[str, Any]]:
        return {
            n: {"matches": m, "average_similarity": s / m if m else None}
            for n, m, s in self.conn.execute("SELECT name, matches, similarity_sum FROM archetype_stats")
        }

    def close(self) -> None:
        self.conn.close()
