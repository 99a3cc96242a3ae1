"""Browsing what a store holds, for people (the inspector): a repo's memories in pages, filtered in SQL
over the snapshot and searched with the FTS index; summaries of linked memories; the repos and their
counts; a repo's overview (counts by kind, status and maturity, memories written per day, those in
doubt). One class answers over the present projections (the snapshot compacted to the head first) or
over a past model's (workers/as_of.py), so the page shows the past exactly as it shows the present.

Every query is confined to what one repo may see (domain/visibility.py) and paged: a text search keeps
its MAX_MATCHES best matches, a list sorts in SQL and returns one page.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson

from strata_recall.domain import beliefs
from strata_recall.domain.visibility import PROPOSED, can_see, sql_parts
from strata_recall.projections import store
from strata_recall.projections.fts import FTSProjection
from strata_recall.projections.links import LinksProjection
from strata_recall.projections.snapshot import SnapshotProjection

SUMMARY = (
    "memory_id",
    "repo_id",
    "scope",
    "kind",
    "status",
    "text",
    "truth",
    "utility",
    "maturity",
    "validations",
    "last_validated",
    "created",
    "change_chain",
    "problem_ids",
)
_SELECT = f"SELECT {', '.join(SUMMARY)} FROM snapshot"
ORDERS = {
    "newest": "created DESC, memory_id DESC",
    "oldest": "created ASC, memory_id ASC",
    "truth": "truth DESC, created DESC, memory_id DESC",
    "utility": "utility DESC, created DESC, memory_id DESC",
}
MAX_MATCHES = 1000
"""A text search lists at most this many of its best matches (bm25), filters and pages included."""


class Browser:
    def __init__(
        self,
        fts: FTSProjection,
        snapshot: SnapshotProjection,
        links: LinksProjection,
        *,
        position: int,
        now: datetime,
        half_life_days: float,
    ) -> None:
        self.fts, self.snapshot, self.links = fts, snapshot, links
        self.position, self.now, self.half_life_days = position, now, half_life_days

    def memories(
        self,
        repo_id: str,
        *,
        include_global: bool = True,
        query: str | None = None,
        kinds: Sequence[str] = (),
        statuses: Sequence[str] = (),
        maturities: Sequence[str] = (),
        order: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many match, the page of summaries) of the memories `repo_id` sees. With `query`, its
        best matches in bm25 order unless `order` is given; else newest first."""
        filters = [("kind", kinds), ("status", statuses), ("maturity", maturities)]
        if query and query.strip():
            ranked = self.fts.matching(
                query, repo_id, include_global=include_global, kinds=kinds, statuses=statuses, limit=MAX_MATCHES
            )
            rows = self.rows(ranked)
            hits = [
                rows[m]
                for m in ranked
                if m in rows and _sees(repo_id, rows[m]) and (not maturities or rows[m]["maturity"] in maturities)
            ]
            if order is not None:  # as ORDERS says, with stable sorts
                hits.sort(key=lambda r: (r["created"], r["memory_id"]), reverse=order != "oldest")
                if order in ("truth", "utility"):
                    hits.sort(key=lambda r: r[order], reverse=True)
            return len(hits), hits[offset : offset + limit]
        where, bound = "", []
        for column, values in filters:
            if values:
                where += f" AND {column} IN ({','.join('?' * len(values))})"
                bound += list(values)
        return self._page(_parts(repo_id, include_global, where, bound), ORDERS[order or "newest"], limit, offset)

    # --- the overview: counts, activity and what needs a person, each part read from the browse index --

    def counts(self, repo_id: str, *, include_global: bool = True) -> dict[tuple[str, str, str, str], int]:
        """How many memories `repo_id` sees, by (scope, kind, status, maturity)."""
        out: Counter[tuple[str, str, str, str]] = Counter()
        for condition, params in _parts(repo_id, include_global):
            for scope, kind, status, maturity, n in self.snapshot.conn.execute(
                f"SELECT scope, kind, status, maturity, count(*) FROM snapshot WHERE {condition}"
                " GROUP BY scope, kind, status, maturity",
                params,
            ):
                out[(scope, kind, status, maturity)] += n
        return dict(out)

    def written_per_day(self, repo_id: str, since: str, *, include_global: bool = True) -> dict[tuple[str, str], int]:
        """How many of the memories `repo_id` sees were written each day (UTC) from `since` (YYYY-MM-DD)
        on, by (day, kind)."""
        out: Counter[tuple[str, str]] = Counter()
        for condition, params in _parts(repo_id, include_global, " AND created >= ?", [since]):
            for day, kind, n in self.snapshot.conn.execute(
                f"SELECT substr(created, 1, 10), kind, count(*) FROM snapshot WHERE {condition}"
                " GROUP BY substr(created, 1, 10), kind",
                params,
            ):
                out[(day, kind)] += n
        return dict(out)

    def doubtful(
        self, repo_id: str, below: float, limit: int, *, include_global: bool = True
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many, the least believed `limit`) of the active memories `repo_id` sees with a truth
        below `below`."""
        return self._page(
            _parts(repo_id, include_global, " AND status = 'active' AND truth < ?", [below]),
            "truth ASC, created DESC, memory_id DESC",
            limit,
        )

    def _page(
        self, parts: list[tuple[str, list[Any]]], order: str, limit: int, offset: int = 0
    ) -> tuple[int, list[dict[str, Any]]]:
        """(how many rows the parts hold, one page of their summaries in `order`): each part is read in
        index order and the parts merged (UNION ALL), so a page costs its own rows, not a sort of
        everything the repo sees."""
        params = [p for _, part in parts for p in part]
        conn = self.snapshot.conn
        total = conn.execute(
            "SELECT " + " + ".join(f"(SELECT count(*) FROM snapshot WHERE {c})" for c, _ in parts), params
        ).fetchone()[0]
        page = [
            row[0]
            for row in conn.execute(
                " UNION ALL ".join(
                    f"SELECT memory_id, created, truth, utility FROM snapshot WHERE {c}" for c, _ in parts
                )
                + f" ORDER BY {order} LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
        ]
        rows = self.rows(page)
        return total, [rows[m] for m in page]

    def rows(self, memory_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Summaries of these memories (absent: unknown here, e.g. written after a past model's position)."""
        found = store.select_in(
            self.snapshot.conn, _SELECT + " WHERE memory_id IN ({marks})", list(dict.fromkeys(memory_ids))
        )
        return {values[0]: self._summary(values) for values in found}

    def owners(self, memory_ids: Iterable[str]) -> dict[str, tuple[str, str, str]]:
        """(scope, repo_id, status) of these memories: what decides who sees them, without the rest of the row."""
        found = store.select_in(
            self.snapshot.conn,
            "SELECT memory_id, scope, repo_id, status FROM snapshot WHERE memory_id IN ({marks})",
            list(dict.fromkeys(memory_ids)),
        )
        return {memory_id: (scope, repo_id, status) for memory_id, scope, repo_id, status in found}

    def visible(self, viewer: str, memory_ids: Iterable[str]) -> list[dict[str, Any]]:
        """Summaries of the memories of `memory_ids` that `viewer` may see, in the order given."""
        ids = list(dict.fromkeys(memory_ids))
        rows = self.rows(ids)
        return [rows[m] for m in ids if m in rows and _sees(viewer, rows[m])]

    def attached(self, problem_id: str) -> dict[str, list[str]]:
        """The solutions and failed tactics linked to a problem, by edge type (`solves`, `failed_on`)."""
        out: dict[str, list[str]] = {"solves": [], "failed_on": []}
        for kind in out:
            out[kind] = self.links.incoming_many([problem_id], (kind,)).get(problem_id, [])
        return out

    def repos(self) -> tuple[list[dict[str, Any]], int]:
        """Every repo with memories of its own (the operator's list: names and counts only; `pending`
        counts its review queue: its own memories and the global ones it proposed), and how many global
        memories there are."""
        repos = [
            {"repo_id": repo, "memories": n, "pending": pending}
            for repo, n, pending in self.snapshot.conn.execute(
                "SELECT repo_id, sum(scope = 'repo'), sum(status = 'pending') FROM snapshot"
                " GROUP BY repo_id HAVING sum(scope = 'repo') > 0 OR sum(status = 'pending') > 0 ORDER BY repo_id"
            )
        ]
        shared = self.snapshot.conn.execute(  # shared ones only: a proposal is its repo's until approved
            f"SELECT count(*) FROM snapshot WHERE scope = 'global' AND status NOT IN ({_PROPOSED})"
        ).fetchone()[0]
        return repos, shared

    def _summary(self, values: Sequence[Any]) -> dict[str, Any]:
        row = dict(zip(SUMMARY, values, strict=True))
        row["change_chain"] = orjson.loads(row["change_chain"])
        row["problem_ids"] = orjson.loads(row["problem_ids"])
        days = (self.now - datetime.fromisoformat(row["last_validated"])).total_seconds() / 86400
        row["truth_decayed"] = round(beliefs.decayed(row["truth"], days, self.half_life_days, row["kind"]), 4)
        row["truth"], row["utility"] = round(row["truth"], 4), round(row["utility"], 4)
        return row


_PROPOSED = ", ".join(f"'{status}'" for status in PROPOSED)


def _parts(
    repo_id: str, include_global: bool, where: str = "", bound: Sequence[Any] = ()
) -> list[tuple[str, list[Any]]]:
    """What `repo_id` sees as disjoint SQL conditions (visibility.sql_parts), each narrowed by `where`
    (binding `bound`), with its parameters."""
    return [
        (f"{condition}{where}", [repo_id, *bound] if binds else list(bound))
        for condition, binds in sql_parts(include_global)
    ]


def _sees(viewer: str, row: dict[str, Any]) -> bool:
    return can_see(viewer, row["scope"], row["repo_id"], status=row["status"])
