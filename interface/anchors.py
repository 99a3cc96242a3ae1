"""Anchors at the edge: fingerprinting a write's anchors from the agent's working tree, the workspace
of a read, and `strata check` (which anchored memories of a repo drifted from a working tree)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog

from strata_recall.domain.anchors import CHANGED, MISSING, Anchor, anchored_text, fingerprint, observe
from strata_recall.domain.commands import AnchorDrift
from strata_recall.domain.duplicates import short
from strata_recall.domain.errors import InvalidInput, NotFound
from strata_recall.domain.visibility import sql_clause
from strata_recall.projections.anchors import Workspace, read_source
from strata_recall.schemas.anchors import AnchorIn, ReadWorkspace

if TYPE_CHECKING:
    from strata_recall.interface.bootstrap import Strata

log = structlog.get_logger("strata.anchors")

GIT_TIMEOUT_S = 5.0


def workspace_root(raw: str, path: str = "workspace.root") -> Path:
    root = Path(raw)
    if not root.is_dir():
        raise NotFound("workspace_not_found", path, f"no folder {raw!r} on this machine (the workspace root is read "
                       "where Strata runs)")
    return root


def git_head(root: Path) -> str | None:
    """The commit checked out in `root`, when it is a git working tree (None otherwise)."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    head = done.stdout.strip()
    return head if done.returncode == 0 and head else None


def resolve(anchors: Sequence[AnchorIn], root_text: str | None) -> tuple[Anchor, ...]:
    """A write's anchors with their fingerprints: as given, or computed from the file under the
    workspace root (the symbol's or lines' text, and the whole file's), with the root's HEAD as the
    commit when none is given."""
    if not anchors:
        return ()
    root = workspace_root(root_text) if root_text is not None else None
    head: list[str | None] = []
    out = []
    for i, given in enumerate(anchors):
        path = f"anchors[{i}]"
        lines = tuple(sorted(given.lines)) if given.lines else None
        fp, file_fp = given.fingerprint, None
        if root is not None:
            source = read_source(root, given.path)
            if source is None and fp is None:
                raise NotFound("anchor_not_found", f"{path}.path", f"no file {given.path!r} under {root_text}")
            if source is not None:
                file_fp = fingerprint(source)
                text = anchored_text(source, given.path, given.symbol, lines)  # type: ignore[arg-type]
                if text is None and fp is None:
                    what = f"symbol {given.symbol!r}" if given.symbol else f"lines {lines[0]}-{lines[1]}"  # type: ignore[index]
                    raise NotFound("anchor_not_found", f"{path}.{'symbol' if given.symbol else 'lines'}",
                                   f"no {what} in {given.path}")
                fp = fp or (fingerprint(text) if text is not None else None)
        if fp is None:
            raise InvalidInput("fingerprint_required", f"{path}.fingerprint",
                               "give the anchor's fingerprint (strata fingerprint FILE prints it) or workspace.root, "
                               "the working tree Strata can read the file in")
        commit = given.commit
        if commit is None and root is not None:
            if not head:
                head.append(git_head(root))
            commit = head[0]
        out.append(Anchor(path=given.path, fingerprint=fp, symbol=given.symbol, lines=lines,  # type: ignore[arg-type]
                          commit=commit, file_fingerprint=file_fp))
    return tuple(out)


def read_workspace(workspace: ReadWorkspace | None) -> Workspace | None:
    if workspace is None:
        return None
    root = workspace_root(workspace.root) if workspace.root is not None else None
    return Workspace(root=root, files=dict(workspace.files or {}))


# --- strata check ---------------------------------------------------------------------------------


def check(strata: Strata, repo_id: str, root_text: str, apply: bool = False) -> dict[str, Any]:
    """Every live memory of `repo_id` anchored to code, judged against the working tree at `root`:
    those whose anchors drifted (changed or gone), with what changed. With `apply`, each drift is
    recorded once as a truth adjustment whose evidence is the fingerprint change."""
    root = workspace_root(root_text, "root")
    strata.compact()  # the snapshot follows the log itself: no model, no other projection needed
    rows = strata.projection("snapshot").conn.execute(
        f"SELECT memory_id, kind, status, text, anchors FROM snapshot WHERE {sql_clause(include_global=False)}"
        " AND anchors != '[]' AND status IN ('active', 'pending') ORDER BY created", (repo_id,)).fetchall()
    head = git_head(root)
    tree = Workspace(root=root)
    drifted: list[dict[str, Any]] = []
    for memory_id, kind, status, text, stored in rows:
        found = []
        for anchor in map(Anchor.of, orjson.loads(stored)):
            state, now = observe(anchor, tree.source(anchor.path))
            if state in (CHANGED, MISSING):
                found.append((anchor, state, now))
        if found:
            drifted.append({"memory_id": memory_id, "kind": kind, "status": status, "text": short(text),
                            "anchors": [{"key": a.key, "state": state, "commit": a.commit, "was": a.fingerprint,
                                         "now": now} for a, state, now in found]})
    report: dict[str, Any] = {"ok": True, "repo_id": repo_id, "root": str(root), "commit": head,
                              "checked": len(rows), "drifted": drifted, "applied": apply, "recorded": 0,
                              "position": None}
    if apply:
        for item in drifted:
            drifts = [AnchorDrift(a["key"], a["was"], a["now"] if a["state"] == CHANGED else None)
                      for a in item["anchors"]]
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
    if report["drifted"] and not report["applied"]:
        lines.append("dry run: nothing recorded (add --apply to lower their truth, with the fingerprints as evidence)")
    return "\n".join(lines)


def fingerprint_file(file: Path, symbol: str | None = None, lines: str | None = None) -> dict[str, Any]:
    """`strata fingerprint`: what an anchor on this file (or a symbol or lines in it) carries."""
    try:
        source = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise NotFound("file_not_found", "file", f"cannot read {file}: {exc.strerror}") from None
    span = _line_range(lines) if lines else None
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
