"""Consolidation's planning (`strata reflect`, also a scheduled job of every serving process): a report per repo (and one for the global
pool) of what keeps its memory from staying clean and true, and the actions that fix it.

Findings, each leading to at most one action per memory (in this order of precedence):

1. superseded: change memories left it with no current truth (truth below the read path's low-truth
   bar) -> archive;
2. decayed: its truth, decayed since it was last validated, is below the floor
   (settings.reflect_truth_floor, 0.1) -> archive (kept in the log, no longer recalled, restorable
   with `strata restore`);
3. near-duplicates: groups of memories of the same kind that say the same thing
   (domain/duplicates.py on their stored embeddings) -> the strongest is kept, each other one is
   archived and reinforces it (undone by `strata unmerge`);
4. failed tactics whose problem later got a working solution (a solution written after it whose
   utility for that problem, or maturity, shows it worked) -> linked to that solution.

A report is a dry run; `apply` records exactly its actions, all or none (domain MemoryLog.consolidate).
A repo's report holds only that repo's memories (and the solutions it may see); the global pool's
only global memories: reports never show one repo another repo's memories.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import structlog

from strata_recall.domain import beliefs
from strata_recall.domain.anchors import Anchor
from strata_recall.domain.changes import Action
from strata_recall.domain.duplicates import MERGE_COSINE, merge_refusal, short
from strata_recall.projections import store
from strata_recall.projections.recall import RecallConfig
from strata_recall.projections.snapshot_queries import MemoryRow, SnapshotReader
from strata_recall.projections.vectors import VectorReader

log = structlog.get_logger("strata.reflect")

WORKING_UTILITY = 0.6
"""A solution whose utility for its problem reached this (or that is established) worked."""
PAIR_CHUNK = 512


@dataclass
class Pool:
    """The memories one report covers: a repo's own, or the global pool (repo_id None)."""

    repo_id: str | None


class Reflection:
    """One run over a data directory's projection files, on connections of its own (it may run on
    the scheduler's thread beside the projection runner)."""

    def __init__(self, projection_dir: Path, floor: float) -> None:
        self.snapshot = SnapshotReader(store.connect(projection_dir / "snapshot.sqlite"))
        vectors = projection_dir / "vectors.sqlite"
        self.vectors = VectorReader(vectors) if vectors.exists() else None
        self.floor = floor
        self.config = RecallConfig()  # the read path's truth floor and half-life

    def close(self) -> None:
        self.snapshot.close()
        if self.vectors is not None:
            self.vectors.close()

    def pools(self) -> list[Pool]:
        return [Pool(r) for r in self.snapshot.repos_with_live_memories()] + [Pool(None)]

    def report(self, pool: Pool, now: datetime | None = None) -> dict[str, Any]:
        now = now or datetime.now(UTC)
        rows = self.snapshot.pool(pool.repo_id)
        taken: set[str] = set()
        archive = self._superseded(pool, rows, taken) + self._decayed(rows, now, taken)
        groups = self._duplicates(rows, taken)
        links = self._failed_tactics(pool, rows, taken)
        actions = [Action("archive", a["memory_id"], a["reason"]) for a in archive]
        actions += [
            Action("merge", m["memory_id"], m["reason"], into=g["keep"]["memory_id"], similarity=m["similarity"])
            for g in groups
            for m in g["merge"]
        ]
        actions += [Action("link", f["memory_id"], f["reason"], related_id=f["solution_id"]) for f in links]
        return {
            "repo_id": pool.repo_id,
            "scope": "global" if pool.repo_id is None else "repo",
            "as_of": now.isoformat(),
            "memories": len(rows),
            "archive": archive,
            "duplicates": groups,
            "failed_tactics_solved": links,
            "actions": [{k: v for k, v in asdict(a).items() if v is not None} for a in actions],
        }

    # --- findings ---------------------------------------------------------------------------------

    def _superseded(self, pool: Pool, rows: list[MemoryRow], taken: set[str]) -> list[dict[str, Any]]:
        found = []
        chained = [r for r in rows if r.change_chain and r.truth < self.config.low_truth]
        shown = self.snapshot.visible_ids(
            pool.repo_id, {c["change_memory_id"] for r in chained for c in r.change_chain}
        )
        for r in chained:
            changes = [c["change_memory_id"] for c in r.change_chain if c["change_memory_id"] in shown]
            taken.add(r.memory_id)
            found.append(
                {
                    **_brief(r),
                    "finding": "superseded",
                    "truth": round(r.truth, 4),
                    "changes": changes,
                    "reason": f"changes left it no current truth ({r.truth:.3f})"
                    + (f": {', '.join(changes)}" if changes else ""),
                }
            )
        return found

    def _decayed(self, rows: list[MemoryRow], now: datetime, taken: set[str]) -> list[dict[str, Any]]:
        found = []
        for r in rows:
            if r.memory_id in taken:
                continue
            validated = datetime.fromisoformat(r.last_validated)
            days = (now - validated).total_seconds() / 86400
            decayed = beliefs.decayed(r.truth, days, self.config.half_life_days, r.kind)
            if decayed < self.floor:
                taken.add(r.memory_id)
                found.append(
                    {
                        **_brief(r),
                        "finding": "decayed",
                        "truth": round(r.truth, 4),
                        "decayed_truth": round(decayed, 4),
                        "last_validated": r.last_validated,
                        "reason": f"decayed truth {decayed:.3f} below the floor {self.floor} "
                        f"(last validated {validated:%Y-%m-%d})",
                    }
                )
        return found

    def _duplicates(self, rows: list[MemoryRow], taken: set[str]) -> list[dict[str, Any]]:
        live = [r for r in rows if r.memory_id not in taken and r.kind != "change"]
        vectors = self._vectors([r.memory_id for r in live])
        live = [r for r in live if r.memory_id in vectors]
        if len(live) < 2:
            return []
        matrix = np.stack([vectors[r.memory_id] for r in live])
        parent = list(range(len(live)))

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for start in range(0, len(live), PAIR_CHUNK):
            block = matrix[start : start + PAIR_CHUNK] @ matrix.T
            for i, j in zip(*np.nonzero(block >= MERGE_COSINE), strict=True):
                a, b = start + int(i), int(j)
                if a < b and self._mergeable(live[b], live[a], float(block[i, j])):
                    parent[root(a)] = root(b)
        members: dict[int, list[int]] = {}
        for i in range(len(live)):
            members.setdefault(root(i), []).append(i)
        groups = []
        for indices in members.values():
            if len(indices) < 2:
                continue
            keep = max(
                indices,
                key=lambda i: (live[i].validations, live[i].reinforcements, live[i].truth, _older(live[i])),
            )
            merged = []
            for i in sorted(indices, key=lambda i: live[i].created):
                similarity = float(matrix[keep] @ matrix[i])
                if i != keep and self._mergeable(live[keep], live[i], similarity):
                    merged.append(
                        {
                            **_brief(live[i]),
                            "similarity": round(similarity, 4),
                            "reason": f"near-duplicate of {live[keep].memory_id} (similarity {similarity:.3f})",
                        }
                    )
                    taken.add(live[i].memory_id)
            if merged:
                taken.add(live[keep].memory_id)
                groups.append({"keep": _brief(live[keep]), "merge": merged})
        return sorted(groups, key=lambda g: g["keep"]["memory_id"])

    @staticmethod
    def _mergeable(keep: MemoryRow, other: MemoryRow, similarity: float) -> bool:
        return (
            merge_refusal(
                status=keep.status,
                kind=keep.kind,
                scope=keep.scope,
                text=keep.text,
                problem_ids=keep.problem_ids,
                anchor_keys=_anchor_keys(keep),
                new_kind=other.kind,
                new_scope=other.scope,
                new_text=other.text,
                new_problem_id=other.problem_ids[0] if other.problem_ids else None,
                new_anchor_keys=_anchor_keys(other),
                similarity=similarity,
            )
            is None
        )

    def _failed_tactics(self, pool: Pool, rows: list[MemoryRow], taken: set[str]) -> list[dict[str, Any]]:
        tactics = [r for r in rows if r.kind == "failed_tactic" and r.memory_id not in taken and r.problem_ids]
        if not tactics:
            return []
        problems = {p for r in tactics for p in r.problem_ids}
        solutions = [
            s
            for s in self.snapshot.pool(pool.repo_id, visible=True, kind="solution")
            if problems.intersection(s.problem_ids)
        ]
        found = []
        for tactic in tactics:
            best = None
            for s in solutions:
                problem = next((p for p in tactic.problem_ids if p in s.problem_ids), None)
                if problem is None or s.created <= tactic.created or s.memory_id in tactic.related_ids:
                    continue
                utility = s.utility_by_problem.get(problem)
                if (utility is not None and utility >= WORKING_UTILITY) or s.maturity in ("established", "proven"):
                    score = (utility or 0.0, s.validations)
                    if best is None or score > best[0]:
                        best = (score, s, problem)
            if best is not None:
                _, s, problem = best
                taken.add(tactic.memory_id)
                found.append(
                    {
                        **_brief(tactic),
                        "problem_id": problem,
                        "solution_id": s.memory_id,
                        "solution_text": short(s.text),
                        "reason": f"problem {problem} was later solved by {s.memory_id}",
                    }
                )
        return found

    # --- reading the projections ------------------------------------------------------------------

    def _vectors(self, ids: list[str]) -> dict[str, np.ndarray]:
        if self.vectors is None or not ids:
            return {}
        return self.vectors.embeddings(ids)


def _brief(row: MemoryRow) -> dict[str, Any]:
    return {"memory_id": row.memory_id, "kind": row.kind, "text": short(row.text)}


def _older(row: MemoryRow) -> float:
    return -datetime.fromisoformat(row.created).timestamp()


def _anchor_keys(row: MemoryRow) -> set[str]:
    return {Anchor.of(a).key for a in row.anchors}


# --- running it ---------------------------------------------------------------------------------


def reflect(
    projection_dir: Path,
    truth_floor: float,
    repo_id: str | None = None,
    *,
    everything: bool = False,
    now: datetime | None = None,
) -> dict[str, Any]:
    """Reports for one repo (`repo_id`), the global pool (`repo_id` None), or every repo and the
    global pool (`everything`), from the projections in `projection_dir`; the actions are recorded by
    the service layer (interface/app/services/hygiene.py). The caller brings the projections up to date
    first."""
    reflection = Reflection(projection_dir, truth_floor)
    try:
        pools = reflection.pools() if everything else [Pool(repo_id)]
        reports = [reflection.report(pool, now) for pool in pools]
    finally:
        reflection.close()
    for report in reports:
        report["applied"] = False  # interface/app/services/hygiene.py apply_reflection records the actions
        log.info(
            "reflected",
            repo_id=report["repo_id"],
            memories=report["memories"],
            actions=len(report["actions"]),
            archive=len(report["archive"]),
            duplicates=sum(len(g["merge"]) for g in report["duplicates"]),
            links=len(report["failed_tactics_solved"]),
        )
    return {"ok": True, "reports": reports}
