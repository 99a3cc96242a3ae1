"""The snapshot's read-only questions (projections/snapshot.py keeps the table; this module asks it):
each a named method returning typed rows, so no module outside projections/ writes SQL on the
snapshot, and the column list and the visibility rule (domain/visibility.py) are written once.

Standard library only, with domain/visibility.py: the lifecycle hooks' local reader
(interface/agents/hook_recall.py) runs in a fresh process under a deadline and opens the file with
`read_only` here, not through the projection (which would import the aggregate's fold). The methods
take any DB-API connection to the file: the projection's own (SnapshotProjection inherits them), one a
worker opened for itself (`SnapshotReader`), or the hook's read-only one.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from strata_recall.domain.visibility import sql_clause

COLUMNS = (
    "memory_id",
    "repo_id",
    "scope",
    "kind",
    "status",
    "text",
    "confidence",
    "truth",
    "utility",
    "utility_by_problem",
    "problem_ids",
    "related_ids",
    "change_chain",
    "evidence_refs",
    "validations",
    "reinforcements",
    "last_validated",
    "maturity",
    "created",
    "version",
    "anchors",
)
"""The snapshot table's derived columns (every column but `state`), in the order the projection writes them."""

JSON_COLUMNS = ("utility_by_problem", "problem_ids", "related_ids", "change_chain", "evidence_refs", "anchors")
"""The columns that hold JSON (a list, or an object for utility_by_problem)."""

IN_CHUNK = 500
"""Ids bound per `IN (...)` list: SQLite's default limit on a statement's parameters is 999."""

_GIT_EVIDENCE = '["git:'
"""How the evidence of a memory learned from a commit starts (domain/learning_commands.py: `git:<sha>` first)."""


@dataclass(frozen=True, slots=True)
class Shown:
    """A live memory a repo may see, as a hook shows it."""

    memory_id: str
    kind: str
    text: str
    scope: str
    anchors: tuple[dict[str, Any], ...]
    problem_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Anchored:
    """A memory anchored to code: what `strata check` judges and `strata learn` follows."""

    memory_id: str
    kind: str
    status: str
    text: str
    anchors: tuple[dict[str, Any], ...]
    changes: int
    """How many change memories it has recorded."""
    created: str
    """ISO 8601."""


@dataclass(frozen=True, slots=True)
class MemoryRow:
    """A memory as the snapshot holds it (every column but `utility` and `version`), its JSON decoded:
    what consolidation judges."""

    memory_id: str
    repo_id: str
    scope: str
    kind: str
    status: str
    text: str
    confidence: float
    truth: float
    utility_by_problem: dict[str, float]
    problem_ids: tuple[str, ...]
    related_ids: tuple[str, ...]
    change_chain: tuple[dict[str, Any], ...]
    evidence_refs: tuple[str, ...]
    validations: int
    reinforcements: int
    last_validated: str
    """ISO 8601."""
    maturity: str
    created: str
    """ISO 8601."""
    anchors: tuple[dict[str, Any], ...]

    @classmethod
    def of(cls, values: Iterable[Any]) -> MemoryRow:
        """From a row of _POOL_COLUMNS."""
        row = decoded(dict(zip(_POOL_COLUMNS, values, strict=True)))
        for key in _TUPLES:
            row[key] = tuple(row[key])
        return cls(**row)


class DigestRow(NamedTuple):
    """A live memory as the Markdown digest lists it (a tuple: the digest unpacks it)."""

    memory_id: str
    kind: str
    scope: str
    text: str
    truth: float
    utility: float
    maturity: str
    problem_ids: tuple[str, ...]
    change_chain: tuple[dict[str, Any], ...]
    last_validated: str
    """ISO 8601."""


def read_only(path: Path) -> Any:
    """A read-only connection to a snapshot file (the standard library's driver: no extension needed)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)


def decoded(row: dict[str, Any], loads: Callable[[str], Any] = json.loads) -> dict[str, Any]:
    """A snapshot row (as a dict of its columns, the JSON ones among them) with its JSON columns decoded
    by `loads`, in place (the read path passes orjson's)."""
    for key in JSON_COLUMNS:
        value = row[key]
        row[key] = [] if value == "[]" else {} if value == "{}" else loads(value)
    return row


def _chunks(ids: Iterable[str]) -> Iterable[list[str]]:
    ordered = sorted(set(ids))
    for i in range(0, len(ordered), IN_CHUNK):
        yield ordered[i : i + IN_CHUNK]


def _marks(ids: list[str]) -> str:
    return ",".join("?" * len(ids))


class SnapshotQueries:
    """The read-only questions, on `self.conn` (a connection to a snapshot file)."""

    conn: Any

    def visible_live(self, memory_ids: Iterable[str], repo_id: str) -> dict[str, Shown]:
        """Those of `memory_ids` that are active and that `repo_id` may see, by id."""
        out: dict[str, Shown] = {}
        for chunk in _chunks(memory_ids):
            rows = self.conn.execute(
                "SELECT memory_id, kind, text, scope, anchors, problem_ids FROM snapshot"
                f" WHERE memory_id IN ({_marks(chunk)}) AND status = 'active' AND {sql_clause()}",
                [*chunk, repo_id],
            )
            for memory_id, kind, text, scope, anchors, problems in rows:
                out[memory_id] = Shown(
                    memory_id,
                    kind,
                    text,
                    scope or "repo",
                    tuple(json.loads(anchors or "[]")),
                    tuple(json.loads(problems or "[]")),
                )
        return out

    def anchored(self, repo_id: str, statuses: tuple[str, ...]) -> list[Anchored]:
        """The repo's own memories (not global ones) in one of `statuses` that carry anchors, oldest first."""
        rows = self.conn.execute(
            "SELECT memory_id, kind, status, text, anchors, change_chain, created FROM snapshot"
            f" WHERE {sql_clause(include_global=False)} AND anchors != '[]' AND status IN ({_marks(list(statuses))})"
            " ORDER BY created",
            (repo_id, *statuses),
        ).fetchall()
        return [_anchored(row) for row in rows]

    def anchored_paths(self, repo_id: str) -> list[list[str]]:
        """The paths each of the repo's own active anchored memories is anchored to, oldest first (what
        `anchored` gives, without the texts: the files' statistics read every such memory)."""
        rows = self.conn.execute(
            f"SELECT anchors FROM snapshot WHERE {sql_clause(include_global=False)} AND anchors != '[]'"
            " AND status = 'active' ORDER BY created",
            (repo_id,),
        )
        return [[anchor["path"] for anchor in json.loads(anchors)] for (anchors,) in rows]

    def anchored_to(self, repo_id: str, path: str) -> list[Anchored]:
        """The repo's own active memories with an anchor naming `path` (and perhaps others whose anchors
        merely contain its JSON form: the caller checks each anchor's path)."""
        pattern = '%"path":' + json.dumps(path, ensure_ascii=False).replace("%", r"\%").replace("_", r"\_") + "%"
        rows = self.conn.execute(
            "SELECT memory_id, kind, status, text, anchors, change_chain, created FROM snapshot"
            f" WHERE {sql_clause(include_global=False)} AND status = 'active' AND anchors LIKE ? ESCAPE '\\'",
            (repo_id, pattern),
        ).fetchall()
        return [_anchored(row) for row in rows]

    def learned_commits(self, repo_id: str) -> list[str]:
        """The shas of the commits whose learned memories are active in the repo (their first evidence)."""
        rows = self.conn.execute(
            "SELECT evidence_refs FROM snapshot WHERE repo_id = ? AND scope = 'repo' AND status = 'active'"
            " AND evidence_refs LIKE ?",
            (repo_id, _GIT_EVIDENCE + "%"),
        )
        shas = (refs[len(_GIT_EVIDENCE) :].split('"', 1)[0] for (refs,) in rows)
        return [sha for sha in shas if len(sha) == 40]

    def digest_rows(self, repo_id: str, include_global: bool = True) -> list[DigestRow]:
        """The active memories the repo sees (global ones with `include_global`), oldest first."""
        rows = self.conn.execute(
            "SELECT memory_id, kind, scope, text, truth, utility, maturity, problem_ids, change_chain, last_validated"
            f" FROM snapshot WHERE {sql_clause(include_global)} AND status = 'active' ORDER BY created",
            (repo_id,),
        ).fetchall()
        return [
            DigestRow(mid, kind, scope, text, truth, utility, maturity, tuple(json.loads(p)), tuple(json.loads(c)), at)
            for mid, kind, scope, text, truth, utility, maturity, p, c, at in rows
        ]

    def texts(self) -> dict[str, str]:
        """Every memory's text, by id."""
        return dict(self.conn.execute("SELECT memory_id, text FROM snapshot"))

    def repos_with_live_memories(self) -> list[str]:
        """The repos that hold an active memory of their own, in order."""
        rows = self.conn.execute(
            "SELECT DISTINCT repo_id FROM snapshot WHERE scope = 'repo' AND status = 'active' ORDER BY repo_id"
        )
        return [row[0] for row in rows]

    def pool(self, repo_id: str | None, *, visible: bool = False, kind: str | None = None) -> list[MemoryRow]:
        """The active memories of a repo's own (`repo_id`; with `visible` also the global ones it sees) or of
        the global pool (`repo_id` None), of `kind` if given, oldest first."""
        where, params = _pool(repo_id, visible)
        if kind is not None:
            where, params = f"{where} AND kind = ?", (*params, kind)
        rows = self.conn.execute(
            f"SELECT {', '.join(_POOL_COLUMNS)} FROM snapshot WHERE {where} AND status = 'active'"
            " ORDER BY created, memory_id",
            params,
        )
        return [MemoryRow.of(values) for values in rows]

    def visible_ids(self, repo_id: str | None, memory_ids: Iterable[str]) -> set[str]:
        """Those of `memory_ids` the repo sees (any status), or that are global (`repo_id` None)."""
        where, params = _pool(repo_id, visible=True)
        out: set[str] = set()
        for chunk in _chunks(memory_ids):
            rows = self.conn.execute(
                f"SELECT memory_id FROM snapshot WHERE {where} AND memory_id IN ({_marks(chunk)})", (*params, *chunk)
            )
            out.update(row[0] for row in rows)
        return out


class SnapshotReader(SnapshotQueries):
    """The questions on a connection of the caller's (a worker's own, or `read_only`'s), closed with it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def close(self) -> None:
        self.conn.close()


_POOL_COLUMNS = tuple(c for c in COLUMNS if c not in ("utility", "version"))
_TUPLES = tuple(c for c in JSON_COLUMNS if c != "utility_by_problem")


def _pool(repo_id: str | None, visible: bool) -> tuple[str, tuple[str, ...]]:
    if repo_id is None:
        return "scope = 'global'", ()
    return sql_clause(include_global=visible), (repo_id,)


def _anchored(row: tuple[Any, ...]) -> Anchored:
    memory_id, kind, status, text, anchors, chain, created = row
    return Anchored(memory_id, kind, status, text, tuple(json.loads(anchors)), len(json.loads(chain)), created)
