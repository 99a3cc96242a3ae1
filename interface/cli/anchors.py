"""`strata check` (which anchored memories of a repo drifted from a working tree) and `strata
fingerprint` (what an anchor on a file carries): the operator's and the user's own files, named on the
command line. Which files may be read, and how: interface/app/workspace.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import structlog

from strata_recall.domain.anchors import BY_GIT, CHANGED, MISSING, Anchor, anchored_text, fingerprint, observe
from strata_recall.domain.commands import AnchorDrift
from strata_recall.domain.duplicates import short
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.interface.app.anchors import git_head
from strata_recall.interface.app.bootstrap import Strata
from strata_recall.interface.app.workspace import FileReader, local_root, not_readable, real
from strata_recall.projections.anchors import Workspace
from strata_recall.projections.snapshot import SnapshotProjection

log = structlog.get_logger("strata.anchors")


def check(strata: Strata, repo_id: str, root_text: str, apply: bool = False) -> dict[str, Any]:
    """Every live memory of `repo_id` anchored to code, judged against the working tree at `root`:
    those whose anchors drifted (changed or gone). With `apply`, each drift is recorded once as a
    truth adjustment. Only anchors whose fingerprints Strata computed are judged here (`unjudged`
    counts the others: a client's fingerprints are compared only with what clients send); the anchors
    of memories learned from the history (domain/anchors.py BY_GIT) are neither judged nor counted."""
    root = local_root(root_text, "root")
    strata.compact()  # the snapshot follows the log itself: no model, no other projection needed
    snapshot: SnapshotProjection = strata.projection("snapshot")  # type: ignore[assignment]
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


def render_check(report: dict[str, Any]) -> str:
    lines = [
        f"{report['checked']} anchored memories of {report['repo_id']} checked against {report['root']}"
        + (f" at {report['commit'][:12]}" if report["commit"] else "")
        + f": {len(report['drifted'])} drifted"
    ]
    for item in report["drifted"]:
        recorded = ""
        if report["applied"]:
            recorded = "  (truth adjusted)" if item.get("recorded") else "  (already recorded)"
        lines.append(f"- {item['kind']} {item['memory_id']}: {item['text']}{recorded}")
        for a in item["anchors"]:
            since = f" since {a['commit'][:12]}" if a["commit"] else ""
            lines.append(f"    {a['key']}: {'changed' if a['state'] == CHANGED else 'gone'}{since}")
    if report["unjudged"]:
        lines.append(
            f"{report['unjudged']} anchors not judged: their fingerprints came from a client (compared only "
            "with the file fingerprints a client sends with a read) or were recorded before Strata kept "
            "track of that (write the memory again with its anchors to re-anchor it)"
        )
    if report["drifted"] and not report["applied"]:
        lines.append("dry run: nothing recorded (add --apply to lower their truth once per drift)")
    return "\n".join(lines)


def fingerprint_file(file: Path, symbol: str | None = None, lines: str | None = None) -> dict[str, Any]:
    """`strata fingerprint`: what an anchor on this file (or a symbol or lines in it) carries. The
    file is the local user's, named on the command line; it is read as workspace files are
    (a regular file, bounded in size and time)."""
    span = _line_range(lines) if lines else None
    target = real(file.expanduser())
    source = FileReader().read(target.parent, target.name) if target is not None else None
    if source is None:
        raise not_readable("file", f"file {str(file)!r}")
    text = anchored_text(source, file.as_posix(), symbol, span)
    if text is None:
        what = f"symbol {symbol!r}" if symbol else f"lines {lines}"
        raise NotFound("anchor_not_found", "symbol" if symbol else "lines", f"no {what} in {file}")
    return {
        "ok": True,
        "path": file.as_posix(),
        "symbol": symbol,
        "lines": list(span) if span else None,
        "fingerprint": fingerprint(text),
        "file_fingerprint": fingerprint(source),
    }


def _line_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        span = sorted((int(first), int(last or first)))
    except ValueError:
        raise InvalidInput("invalid_lines", "lines", f"{text!r} is not a line range FIRST-LAST (e.g. 10-24)") from None
    if span[0] < 1:
        raise InvalidInput("invalid_lines", "lines", "lines are numbered from 1")
    return span[0], span[1]
