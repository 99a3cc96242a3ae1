"""Anchors at the edge: fingerprinting a write's anchors from the agent's working tree, the workspace
of a read, `strata check` (which anchored memories of a repo drifted from a working tree) and
`strata fingerprint`. Which files may be read, and how: interface/workspace.py."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from strata_recall.domain.anchors import (BY_CLIENT, BY_STRATA, CHANGED, MISSING, Anchor, anchored_text, fingerprint,
                                          observe)
from strata_recall.domain.commands import AnchorDrift
from strata_recall.domain.duplicates import short
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.domain.visibility import sql_clause
from strata_recall.interface.workspace import FileReader, Workspaces, local_root, not_readable, real
from strata_recall.projections.anchors import Workspace
from strata_recall.schemas.anchors import AnchorIn, ReadWorkspace

if TYPE_CHECKING:
    from strata_recall.interface.bootstrap import Strata

log = structlog.get_logger("strata.anchors")

GIT_TIMEOUT_S = 5.0


def git_head(root: Path) -> str | None:
    """The commit checked out in `root`, when it is a git working tree (None otherwise)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and head else None


def resolve(anchors: Sequence[AnchorIn], root_text: str | None, workspaces: Workspaces) -> tuple[Anchor, ...]:
    """A write's anchors with their fingerprints: as the client gave them (BY_CLIENT: Strata reads no
    file for them), or computed from the file under the workspace root (BY_STRATA: the symbol's or
    lines' text, and the whole file's), with the root's HEAD as the commit when none is given. A root
    is checked whenever one is given (`workspaces` refuses it for a client that is not local)."""
    root = workspaces.root(root_text) if root_text is not None else None
    head: list[str | None] = []
    out = []
    for i, given in enumerate(anchors):
        path = f"anchors[{i}]"
        lines = tuple(sorted(given.lines)) if given.lines else None
        commit = given.commit
        if commit is None and root is not None:
            if not head:
                head.append(git_head(root))
            commit = head[0]
        if given.fingerprint is not None:
            out.append(Anchor(path=given.path, fingerprint=given.fingerprint, symbol=given.symbol, lines=lines,  # type: ignore[arg-type]
                              commit=commit, file_fingerprint=given.file_fingerprint, fingerprinted_by=BY_CLIENT))
            continue
        if root is None:
            raise InvalidInput("fingerprint_required", f"{path}.fingerprint",
                               "give the anchor's fingerprint and file_fingerprint (strata fingerprint FILE prints "
                               "them) or, on the machine Strata runs on, workspace.root: the working tree to read "
                               "the file in")
        source = workspaces.read(root, given.path)
        if source is None:
            raise not_readable(f"{path}.path", f"file {given.path!r}")
        text = anchored_text(source, given.path, given.symbol, lines)  # type: ignore[arg-type]
        if text is None:
            what = f"symbol {given.symbol!r}" if given.symbol else f"lines {lines[0]}-{lines[1]}"  # type: ignore[index]
            raise NotFound("anchor_not_found", f"{path}.{'symbol' if given.symbol else 'lines'}",
                           f"no {what} in {given.path}")
        out.append(Anchor(path=given.path, fingerprint=fingerprint(text), symbol=given.symbol, lines=lines,  # type: ignore[arg-type]
                          commit=commit, file_fingerprint=fingerprint(source), fingerprinted_by=BY_STRATA))
    return tuple(out)


def read_workspace(workspace: ReadWorkspace | None, workspaces: Workspaces) -> Workspace | None:
    if workspace is None:
        return None
    files = dict(workspace.files or {})
    if workspace.root is None:
        return Workspace(files=files)
    root = workspaces.root(workspace.root)
    return Workspace(read=lambda path: workspaces.read(root, path), files=files)


# --- strata check ---------------------------------------------------------------------------------


def check(strata: Strata, repo_id: str, root_text: str, apply: bool = False) -> dict[str, Any]:
    """Every live memory of `repo_id` anchored to code, judged against the working tree at `root`:
    those whose anchors drifted (changed or gone). With `apply`, each drift is recorded once as a
    truth adjustment. Only anchors whose fingerprints Strata computed are judged here (`unjudged`
    counts the others: a client's fingerprints are compared only with what clients send)."""
    root = local_root(root_text, "root")
    strata.compact()  # the snapshot follows the log itself: no model, no other projection needed
    rows = strata.projection("snapshot").conn.execute(
        f"SELECT memory_id, kind, status, text, anchors FROM snapshot WHERE {sql_clause(include_global=False)}"
        " AND anchors != '[]' AND status IN ('active', 'pending') ORDER BY created", (repo_id,)).fetchall()
    head = git_head(root)
    reader = FileReader()
    tree = Workspace(read=lambda path: reader.read(root, path))
    drifted: list[dict[str, Any]] = []
    unjudged = 0
    for memory_id, kind, status, text, stored in rows:
        found = []
        for anchor in map(Anchor.of, orjson.loads(stored)):
            if not tree.judges(anchor):
                unjudged += 1
                continue
            state = observe(anchor, tree.source(anchor.path))[0]
            if state in (CHANGED, MISSING):
                found.append((anchor, state))
        if found:
            drifted.append({"memory_id": memory_id, "kind": kind, "status": status, "text": short(text),
                            "anchors": [{"key": a.key, "state": state, "commit": a.commit} for a, state in found]})
    report: dict[str, Any] = {"ok": True, "repo_id": repo_id, "root": str(root), "commit": head,
                              "checked": len(rows), "unjudged": unjudged, "drifted": drifted, "applied": apply,
                              "recorded": 0, "position": None}
    if apply:
        for item in drifted:
            drifts = [AnchorDrift(a["key"], gone=a["state"] == MISSING) for a in item["anchors"]]
            outcome = strata.log.anchor_drift(repo_id, item["memory_id"], drifts, head)
            item["recorded"] = bool(outcome.recorded)
            report["recorded"] += bool(outcome.recorded)
            report["position"] = outcome.position or report["position"]
        log.info("anchors_checked", repo_id=repo_id, checked=len(rows), drifted=len(drifted),
                 recorded=report["recorded"], position=report["position"])
    return report


def render_check(report: dict[str, Any]) -> str:
    lines = [f"{report['checked']} anchored memories of {report['repo_id']} checked against {report['root']}"
             + (f" at {report['commit'][:12]}" if report["commit"] else "") + f": {len(report['drifted'])} drifted"]
    for item in report["drifted"]:
        recorded = ""
        if report["applied"]:
            recorded = "  (truth adjusted)" if item.get("recorded") else "  (already recorded)"
        lines.append(f"- {item['kind']} {item['memory_id']}: {item['text']}{recorded}")
        for a in item["anchors"]:
            since = f" since {a['commit'][:12]}" if a["commit"] else ""
            lines.append(f"    {a['key']}: {'changed' if a['state'] == CHANGED else 'gone'}{since}")
    if report["unjudged"]:
        lines.append(f"{report['unjudged']} anchors not judged: their fingerprints came from a client (compared only "
                     "with the file fingerprints a client sends with a read) or were recorded before Strata kept "
                     "track of that (write the memory again with its anchors to re-anchor it)")
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
    return {"ok": True, "path": file.as_posix(), "symbol": symbol, "lines": list(span) if span else None,
            "fingerprint": fingerprint(text), "file_fingerprint": fingerprint(source)}


def _line_range(text: str) -> tuple[int, int]:
    first, _, last = text.partition("-")
    try:
        span = sorted((int(first), int(last or first)))
    except ValueError:
        raise InvalidInput("invalid_lines", "lines", f"{text!r} is not a line range FIRST-LAST (e.g. 10-24)") from None
    if span[0] < 1:
        raise InvalidInput("invalid_lines", "lines", "lines are numbered from 1")
    return span[0], span[1]
