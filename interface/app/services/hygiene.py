"""Hygiene: keeping memory true to the code and free of clutter. `check` judges a repo's anchored
memories against a working tree and, applied, lowers the truth of those whose code drifted (moved whole
from interface/cli/anchors.py); `apply_reflection` records what a consolidation report found
(workers/consolidation.py plans it)."""

from __future__ import annotations

from typing import Any

import structlog

from strata_recall.domain.anchors import BY_GIT, CHANGED, MISSING, Anchor, observe
from strata_recall.domain.application import MemoryLog
from strata_recall.domain.changes import Action, AnchorDrift
from strata_recall.domain.duplicates import short
from strata_recall.interface.app.anchors import git_head
from strata_recall.interface.app.workspace import FileReader, local_root
from strata_recall.projections.anchors import Workspace
from strata_recall.projections.snapshot import SnapshotProjection

log = structlog.get_logger("strata.anchors")


def check(strata: Any, repo_id: str, root_text: str, apply: bool = False) -> dict[str, Any]:
    """Every live memory of `repo_id` anchored to code, judged against the working tree at `root`:
    those whose anchors drifted (changed or gone). With `apply`, each drift is recorded once as a
    truth adjustment. Only anchors whose fingerprints Strata computed are judged here (`unjudged`
    counts the others: a client's fingerprints are compared only with what clients send); the anchors
    of memories learned from the history (domain/anchors.py BY_GIT) are neither judged nor counted."""
    root = local_root(root_text, "root")
    strata.compact()  # the snapshot follows the log itself: no model, no other projection needed
    snapshot: SnapshotProjection = strata.projection("snapshot")
    rows = snapshot.anchored(repo_id, ("active", "pending"))
    head = git_head(root)
    reader = FileReader()
    tree = Workspace(read=lambda path: reader.read(root, path))
    drifted: list[dict[str, Any]] = []
    unjudged = learned = 0
    for row in rows:
        memory_id, kind, status, text = row.memory_id, row.kind, row.status, row.text
        found = []
        anchors = [a for a in map(Anchor.of, row.anchors) if a.fingerprinted_by != BY_GIT]
        if not anchors:  # learned from the history (strata learn): the files a commit touched, nothing to judge
            learned += 1
            continue
        for anchor in anchors:
            if not tree.judges(anchor):
                unjudged += 1
                continue
            state = observe(anchor, tree.source(anchor.path))[0]
            if state in (CHANGED, MISSING):
                found.append((anchor, state))
        if found:
            drifted.append(
                {
                    "memory_id": memory_id,
                    "kind": kind,
                    "status": status,
                    "text": short(text),
                    "anchors": [{"key": a.key, "state": state, "commit": a.commit} for a, state in found],
                }
            )
    report: dict[str, Any] = {
        "ok": True,
        "repo_id": repo_id,
        "root": str(root),
        "commit": head,
        "checked": len(rows) - learned,
        "unjudged": unjudged,
        "drifted": drifted,
        "applied": apply,
        "recorded": 0,
        "position": None,
    }
    if apply:
        for item in drifted:
            drifts = [AnchorDrift(a["key"], gone=a["state"] == MISSING) for a in item["anchors"]]
            outcome = strata.log.anchor_drift(repo_id, item["memory_id"], drifts, head)
            item["recorded"] = bool(outcome.recorded)
            report["recorded"] += bool(outcome.recorded)
            report["position"] = outcome.position or report["position"]
        log.info(
            "anchors_checked",
            repo_id=repo_id,
            checked=len(rows) - learned,
            drifted=len(drifted),
            recorded=report["recorded"],
            position=report["position"],
        )
    return report


def apply_reflection(memory_log: MemoryLog, result: dict[str, Any]) -> dict[str, Any]:
    """Record each report's actions (all of a report or none: MemoryLog.consolidate checks each against
    the state now); the reports say what was recorded."""
    for report in result["reports"]:
        if report["actions"]:
            actions = [Action(**a) for a in report["actions"]]
            outcome = memory_log.consolidate(actions, report["repo_id"])
            report.update(applied=True, recorded=outcome.recorded, position=outcome.position)
            log.info(
                "reflect_applied", repo_id=report["repo_id"], recorded=len(outcome.recorded), position=outcome.position
            )
    return result
