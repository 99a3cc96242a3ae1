"""Explicit associations as typed edges: solution -> problem (solves), failed tactic -> problem
(failed_on), any other memory -> problem (about), change -> target (changes), related."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import Any

from strata_recall.domain.memory import Memory
from strata_recall.projections import store
from strata_recall.projections.base import Record, RecordProjection
from strata_recall.projections.store import Connection

_first = itemgetter(0)

PROBLEM_EDGE = {"solution": "solves", "failed_tactic": "failed_on"}


def m001_create_tables(conn: Connection) -> None:
    conn.execute(
        "CREATE TABLE links (src TEXT NOT NULL, type TEXT NOT NULL, dst TEXT NOT NULL,"
        " PRIMARY KEY (src, type, dst)) WITHOUT ROWID"
    )
    conn.execute(INDEXES["links_dst"])
    # the kind of every memory, so a links-only replay can type edges added later (LinksAdded)
    conn.execute("CREATE TABLE link_kinds (memory_id TEXT PRIMARY KEY, kind TEXT NOT NULL) WITHOUT ROWID")


INDEXES = {"links_dst": "CREATE INDEX IF NOT EXISTS links_dst ON links (dst, type)"}
"""Built once at the end of a replay into an empty projection (Projection.deferred_indexes)."""


def edges_of(
    kind: str, src: str, problem_ids: Sequence[str], related: Sequence[str], targets: Sequence[str]
) -> Iterator[tuple[str, str, str]]:
    for problem in problem_ids:
        yield src, PROBLEM_EDGE.get(kind, "about"), problem
    for other in related:
        yield src, "related", other
    for target in targets:
        yield src, "changes", target


class LinksProjection(RecordProjection):
    name = "links"
    migrations = (m001_create_tables,)
    tables = ("links", "link_kinds")
    digest_queries = ("SELECT src, type, dst FROM links ORDER BY src, type, dst",)
    count_query = "SELECT count(*) FROM links"

    reads = (Memory.MemoryWritten, Memory.LinksAdded)
    deferred_indexes = INDEXES

    def apply_records(self, conn: Connection, batch: Sequence[Record]) -> None:
        edges: list[tuple[str, str, str]] = []
        kinds: dict[str, str] = {}  # memories written in this batch (INSERT OR IGNORE: the first wins)
        added: list[tuple[str, Any]] = []  # LinksAdded's fields, typed once the kinds are known
        written, links_added = Memory.MemoryWritten, Memory.LinksAdded
        for _, kind, src, _, _, e in batch:
            if kind is written:
                kinds.setdefault(src, e["kind"])
                problems = (e["problem_id"],) if e["problem_id"] else ()
                edges += edges_of(e["kind"], src, problems, e["related_ids"], e["change_targets"])
            elif kind is links_added:
                added.append((src, e))
        if added:
            # a kind is fixed by the memory's first write, which precedes its LinksAdded in the log
            known = self._kinds(conn, {src for src, _ in added if src not in kinds})
            for src, e in added:
                edges += edges_of(
                    kinds.get(src) or known.get(src, ""),
                    src,
                    e["problem_ids"],
                    e["related_ids"],
                    e["change_targets"],
                )
        # in order of their memory (the b-trees' order: inserts land on the page before): sorted by the
        # memory's id alone, a third of the time of sorting the whole tuples; the rows are the same
        conn.executemany("INSERT OR IGNORE INTO link_kinds VALUES (?, ?)", sorted(kinds.items(), key=_first))
        conn.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?)", sorted(edges, key=_first))

    @staticmethod
    def _kinds(conn: Connection, memory_ids: set[str]) -> dict[str, str]:
        return dict(
            store.select_in(
                conn, "SELECT memory_id, kind FROM link_kinds WHERE memory_id IN ({marks})", sorted(memory_ids)
            )
        )

    def incoming_many(self, memory_ids: list[str], types: tuple[str, ...]) -> dict[str, list[str]]:
        """For each memory, the sources of its incoming edges of these types (one query)."""
        out: dict[str, list[str]] = {}
        if not memory_ids:
            return out
        sql = (
            f"SELECT dst, src FROM links WHERE dst IN ({','.join('?' * len(memory_ids))})"
            f" AND type IN ({','.join('?' * len(types))})"
        )
        for dst, src in self.conn.execute(sql, [*memory_ids, *types]):
            out.setdefault(dst, []).append(src)
        return out

    def related_many(self, memory_ids: list[str]) -> dict[str, list[str]]:
        """`related` neighbours in both directions, for many memories in one query."""
        out: dict[str, list[str]] = {}
        if not memory_ids:
            return out
        marks = ",".join("?" * len(memory_ids))
        sql = f"SELECT src, dst FROM links WHERE type = 'related' AND (src IN ({marks}) OR dst IN ({marks}))"
        wanted = set(memory_ids)
        for src, dst in self.conn.execute(sql, [*memory_ids, *memory_ids]):
            if src in wanted:
                out.setdefault(src, []).append(dst)
            if dst in wanted:
                out.setdefault(dst, []).append(src)
        return out
